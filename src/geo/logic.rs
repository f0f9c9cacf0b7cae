//! Redis's geo arithmetic, ported so the memory backend (and the gateway's own geohash strings)
//! agree with Redis to the last bit: the 52-bit interleaved geohash a geo set stores as its score,
//! the centre of its cell that GEOPOS reports, the 11-character string GEOHASH prints, and the
//! haversine GEODIST/GEOSEARCH use (Redis `src/geohash.c`, `geohash_helper.c`, `geo.c`), and
//! the search tests and ordering both backends apply to candidates.
//!
//! Hand-rolled rather than taken from a geohash crate: the crates encode over latitude
//! [-90, 90], while Redis stores over [-85.05112878, 85.05112878] (Web Mercator's limit) and only
//! re-encodes over [-90, 90] for GEOHASH; matching its rounding needs its exact operation order.

use super::{Order, Point, Shape, Unit};

/// Earth radius Redis uses for every distance, in metres.
pub const EARTH_RADIUS_M: f64 = 6_372_797.560_856;
pub const LON_MIN: f64 = -180.0;
pub const LON_MAX: f64 = 180.0;
pub const LAT_MIN: f64 = -85.051_128_78;
pub const LAT_MAX: f64 = 85.051_128_78;

/// Bits per axis of a stored geohash (52 bits in all, exact in a double score).
pub const STEP: u32 = 26;

const ALPHABET: &[u8; 32] = b"0123456789bcdefghjkmnpqrstuvwxyz";

/// Spreads the 32 bits of `v` over the even bits of a u64 (Redis `interleave64`).
fn spread(v: u32) -> u64 {
    let mut x = u64::from(v);
    x = (x | (x << 16)) & 0x0000_FFFF_0000_FFFF;
    x = (x | (x << 8)) & 0x00FF_00FF_00FF_00FF;
    x = (x | (x << 4)) & 0x0F0F_0F0F_0F0F_0F0F;
    x = (x | (x << 2)) & 0x3333_3333_3333_3333;
    x = (x | (x << 1)) & 0x5555_5555_5555_5555;
    x
}

/// The inverse of [`spread`]: gathers the even bits of `x`.
fn gather(x: u64) -> u32 {
    let mut x = x & 0x5555_5555_5555_5555;
    x = (x | (x >> 1)) & 0x3333_3333_3333_3333;
    x = (x | (x >> 2)) & 0x0F0F_0F0F_0F0F_0F0F;
    x = (x | (x >> 4)) & 0x00FF_00FF_00FF_00FF;
    x = (x | (x >> 8)) & 0x0000_FFFF_0000_FFFF;
    x = (x | (x >> 16)) & 0x0000_0000_FFFF_FFFF;
    x as u32
}

/// Redis `geohashEncode` at [`STEP`] over the given latitude range (longitude is always ±180).
fn encode_over(lon: f64, lat: f64, lat_min: f64, lat_max: f64) -> u64 {
    let cells = (1u64 << STEP) as f64;
    let lat_offset = (lat - lat_min) / (lat_max - lat_min) * cells;
    let lon_offset = (lon - LON_MIN) / (LON_MAX - LON_MIN) * cells;
    // `as u32` truncates like C's double → uint32_t conversion for these in-range values.
    spread(lat_offset as u32) | (spread(lon_offset as u32) << 1)
}

/// The score GEOADD stores for a (validated) position.
pub fn encode(lon: f64, lat: f64) -> u64 {
    encode_over(lon, lat, LAT_MIN, LAT_MAX)
}

/// The position GEOPOS reports for a score: the centre of its cell, clamped to the limits.
pub fn decode(score: u64) -> (f64, f64) {
    let cells = (1u64 << STEP) as f64;
    let ilat = gather(score);
    let ilon = gather(score >> 1);
    let lat_scale = LAT_MAX - LAT_MIN;
    let lon_scale = LON_MAX - LON_MIN;
    let lat_lo = LAT_MIN + (f64::from(ilat) / cells) * lat_scale;
    let lat_hi = LAT_MIN + (f64::from(ilat.wrapping_add(1)) / cells) * lat_scale;
    let lon_lo = LON_MIN + (f64::from(ilon) / cells) * lon_scale;
    let lon_hi = LON_MIN + (f64::from(ilon.wrapping_add(1)) / cells) * lon_scale;
    let lon = ((lon_lo + lon_hi) / 2.0).clamp(LON_MIN, LON_MAX);
    let lat = ((lat_lo + lat_hi) / 2.0).clamp(LAT_MIN, LAT_MAX);
    (lon, lat)
}

/// The standard 11-character geohash GEOHASH prints for a stored score: the decoded position
/// re-encoded over latitude [-90, 90]; the 11th character is always `0` (52 bits only).
pub fn geohash(score: u64) -> String {
    let (lon, lat) = decode(score);
    let bits = encode_over(lon, lat, -90.0, 90.0);
    let mut out = String::with_capacity(11);
    for i in 0..10 {
        let idx = (bits >> (52 - (i + 1) * 5)) & 0x1f;
        out.push(char::from(ALPHABET[idx as usize]));
    }
    out.push('0');
    out
}

/// Great-circle distance in metres, exactly as Redis `geohashGetDistance` computes it.
pub fn distance(lon1: f64, lat1: f64, lon2: f64, lat2: f64) -> f64 {
    let lon1r = lon1.to_radians();
    let lon2r = lon2.to_radians();
    let v = ((lon2r - lon1r) / 2.0).sin();
    if v == 0.0 {
        return lat_distance(lat1, lat2);
    }
    let lat1r = lat1.to_radians();
    let lat2r = lat2.to_radians();
    let u = ((lat2r - lat1r) / 2.0).sin();
    let a = u * u + lat1r.cos() * lat2r.cos() * v * v;
    2.0 * EARTH_RADIUS_M * a.sqrt().asin()
}

/// Metres along a meridian (Redis `geohashGetLatDistance`).
pub fn lat_distance(lat1: f64, lat2: f64) -> f64 {
    EARTH_RADIUS_M * (lat2.to_radians() - lat1.to_radians()).abs()
}

/// Redis `geohashGetDistanceIfInRectangle`: the point `(x, y)` is inside the box of
/// `width_m` × `height_m` centred on `(cx, cy)` when its latitude distance is within half the
/// height and its longitude distance, measured along the centre's parallel, within half the
/// width. Returns its distance from the centre when inside.
pub fn in_box(width_m: f64, height_m: f64, cx: f64, cy: f64, x: f64, y: f64) -> Option<f64> {
    if lat_distance(y, cy) > height_m / 2.0 {
        return None;
    }
    if distance(x, cy, cx, cy) > width_m / 2.0 {
        return None;
    }
    Some(distance(cx, cy, x, y))
}

/// Redis prints every distance with `%.4f`; both backends answer that same value.
pub fn round4(x: f64) -> f64 {
    format!("{x:.4}").parse().unwrap_or(x)
}

/// A longitude/latitude rectangle; `lon_lo > lon_hi` never happens (wrapping boxes are split).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rect {
    pub lon_lo: f64,
    pub lon_hi: f64,
    pub lat_lo: f64,
    pub lat_hi: f64,
}

/// Margin added to candidate rectangles so float error never drops a point on the edge; the
/// exact test afterwards decides.
const SLACK_DEG: f64 = 1e-6;

/// Rectangles (one, or two across the antimeridian) that hold every point within `half_lat`
/// degrees of latitude and `half_lon` degrees of longitude of the centre.
fn rects(lon: f64, lat: f64, half_lon: Option<f64>, half_lat: f64) -> Vec<Rect> {
    let lat_lo = lat - half_lat - SLACK_DEG;
    let lat_hi = lat + half_lat + SLACK_DEG;
    let full = |lat_lo, lat_hi| {
        vec![Rect {
            lon_lo: LON_MIN,
            lon_hi: LON_MAX,
            lat_lo,
            lat_hi,
        }]
    };
    let Some(half_lon) = half_lon.map(|h| h + SLACK_DEG).filter(|h| *h < 180.0) else {
        return full(lat_lo, lat_hi);
    };
    let (lo, hi) = (lon - half_lon, lon + half_lon);
    let rect = |lon_lo, lon_hi| Rect {
        lon_lo,
        lon_hi,
        lat_lo,
        lat_hi,
    };
    if lo < LON_MIN {
        vec![rect(lo + 360.0, LON_MAX), rect(LON_MIN, hi)]
    } else if hi > LON_MAX {
        vec![rect(lo, LON_MAX), rect(LON_MIN, hi - 360.0)]
    } else {
        vec![rect(lo, hi)]
    }
}

/// Candidate rectangles for a circle of `radius_m` around `(lon, lat)`.
pub fn circle_rects(lon: f64, lat: f64, radius_m: f64) -> Vec<Rect> {
    let delta = radius_m / EARTH_RADIUS_M;
    let half_lat = delta.to_degrees();
    // The widest longitude of a spherical cap, while it does not reach a pole.
    let half_lon = (lat.abs() + half_lat < 90.0 && delta < std::f64::consts::FRAC_PI_2)
        .then(|| delta.sin() / lat.to_radians().cos())
        .filter(|s| *s < 1.0)
        .map(|s| s.asin().to_degrees());
    rects(lon, lat, half_lon, half_lat)
}

/// Candidate rectangles for a `width_m` × `height_m` box (Redis's box test, see [`in_box`]).
pub fn box_rects(lon: f64, lat: f64, width_m: f64, height_m: f64) -> Vec<Rect> {
    let half_lat = (height_m / 2.0 / EARTH_RADIUS_M).to_degrees();
    let quarter = width_m / 4.0 / EARTH_RADIUS_M;
    let half_lon = (quarter < std::f64::consts::FRAC_PI_2)
        .then(|| quarter.sin() / lat.to_radians().cos())
        .filter(|s| *s < 1.0)
        .map(|s| 2.0 * s.asin().to_degrees());
    rects(lon, lat, half_lon, half_lat)
}

/// Most geohash cells [`cover`] uses for one rectangle.
const COVER_CELLS: u64 = 16;

/// Score ranges `[lo, hi)` of geohash cells that together hold every stored point inside
/// `r`: the cells of the finest step at which `r` spans at most [`COVER_CELLS`] of them, so a
/// store can read the candidates with a few range queries. Adjacent ranges are joined.
pub fn cover(r: &Rect) -> Vec<(u64, u64)> {
    let (lat_lo, lat_hi) = (r.lat_lo.max(LAT_MIN), r.lat_hi.min(LAT_MAX));
    if lat_lo > lat_hi {
        return Vec::new();
    }
    let mut step = STEP;
    loop {
        let cells = (1u64 << step) as f64;
        let index = |v: f64, min: f64, max: f64| {
            ((v - min) / (max - min) * cells)
                .floor()
                .clamp(0.0, cells - 1.0) as u32
        };
        let (x0, x1) = (
            index(r.lon_lo, LON_MIN, LON_MAX),
            index(r.lon_hi, LON_MIN, LON_MAX),
        );
        let (y0, y1) = (
            index(lat_lo, LAT_MIN, LAT_MAX),
            index(lat_hi, LAT_MIN, LAT_MAX),
        );
        if step == 0 || u64::from(x1 - x0 + 1) * u64::from(y1 - y0 + 1) <= COVER_CELLS {
            let shift = 2 * (STEP - step);
            let mut ranges: Vec<(u64, u64)> = (y0..=y1)
                .flat_map(|y| (x0..=x1).map(move |x| spread(y) | (spread(x) << 1)))
                .map(|h| (h << shift, (h + 1) << shift))
                .collect();
            // GEOADD at longitude exactly 180 (latitude exactly the maximum) stores an index
            // one past the last cell: bit 53 (52) set. Only such points live at or above 2^52.
            if f64::from(x1) == cells - 1.0 {
                ranges.push((1 << 53, 1 << 54));
            }
            if f64::from(y1) == cells - 1.0 {
                ranges.push((1 << 52, 1 << 53));
            }
            return join(&mut ranges);
        }
        step -= 1;
    }
}

/// Sorts `ranges` and joins those that touch or overlap.
pub fn join(ranges: &mut [(u64, u64)]) -> Vec<(u64, u64)> {
    ranges.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(ranges.len());
    for &(lo, hi) in ranges.iter() {
        match out.last_mut() {
            Some(last) if lo <= last.1 => last.1 = last.1.max(hi),
            _ => out.push((lo, hi)),
        }
    }
    out
}

/// Redis's own membership test for a search shape (the same products, `radius * conversion`,
/// that it computes): the distance in metres of a point inside the shape, else `None`.
pub fn within(center: Point, shape: Shape, unit: Unit) -> impl Fn(f64, f64) -> Option<f64> {
    let (cx, cy) = (center.lon, center.lat);
    let m = unit.meters();
    move |x, y| match shape {
        Shape::Radius(r) => Some(distance(cx, cy, x, y)).filter(|d| *d <= r * m),
        Shape::Box { width, height } => in_box(width * m, height * m, cx, cy, x, y),
    }
}

/// Candidate rectangles of a search shape around `center`.
pub fn shape_rects(center: Point, shape: Shape, unit: Unit) -> Vec<Rect> {
    let m = unit.meters();
    match shape {
        Shape::Radius(r) => circle_rects(center.lon, center.lat, r * m),
        Shape::Box { width, height } => box_rects(center.lon, center.lat, width * m, height * m),
    }
}

/// Keeps the first `count` of `hits` (distance first) in `order`, sorted. Only those need
/// sorting: they are selected first, so a huge area costs a linear pass, not a full sort.
pub fn first_by_distance<T>(hits: &mut Vec<(f64, T)>, order: Order, count: usize) {
    let by_distance = |a: &(f64, T), b: &(f64, T)| match order {
        Order::Asc => a.0.total_cmp(&b.0),
        Order::Desc => b.0.total_cmp(&a.0),
    };
    if count == 0 {
        hits.clear();
    } else if hits.len() > count {
        hits.select_nth_unstable_by(count - 1, by_distance);
        hits.truncate(count);
    }
    hits.sort_by(by_distance);
}

/// Geohash precision (bits per axis) whose cells are at least `2 * radius_m` tall: the cell
/// around the centre at this step is what the Redis backend counts to estimate density.
pub fn density_step(radius_m: f64) -> u32 {
    let deg_m = EARTH_RADIUS_M.to_radians(); // metres per degree of latitude
    let mut step = STEP;
    while step > 1 && (LAT_MAX - LAT_MIN) / f64::from(1u32 << step) * deg_m < 2.0 * radius_m {
        step -= 1;
    }
    step
}

#[cfg(test)]
mod tests {
    use super::*;

    // Reference values from the Redis documentation (GEOADD/GEOPOS/GEOHASH/GEODIST "Sicily").
    const PALERMO: (f64, f64) = (13.361389, 38.115556);
    const CATANIA: (f64, f64) = (15.087269, 37.502669);

    #[test]
    fn scores_and_positions_match_redis() {
        let p = encode(PALERMO.0, PALERMO.1);
        assert_eq!(p, 3_479_099_956_230_698);
        assert_eq!(encode(CATANIA.0, CATANIA.1), 3_479_447_370_796_909);
        let (lon, lat) = decode(p);
        assert_eq!(format!("{lon:.17}"), "13.36138933897018433");
        assert_eq!(format!("{lat:.17}"), "38.11555639549629859");
    }

    #[test]
    fn geohash_strings_match_redis() {
        assert_eq!(geohash(encode(PALERMO.0, PALERMO.1)), "sqc8b49rny0");
        assert_eq!(geohash(encode(CATANIA.0, CATANIA.1)), "sqdtr74hyu0");
        assert_eq!(geohash(encode(0.0, 0.0)).len(), 11);
    }

    #[test]
    fn distances_match_redis() {
        let (a, b) = (
            decode(encode(PALERMO.0, PALERMO.1)),
            decode(encode(CATANIA.0, CATANIA.1)),
        );
        let d = distance(a.0, a.1, b.0, b.1);
        assert_eq!(round4(d), 166_274.151_6);
        assert_eq!(round4(d / 1000.0), 166.2742);
        // GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200 km: Catania 56.4413, Palermo 190.4424.
        assert_eq!(round4(distance(15.0, 37.0, b.0, b.1) / 1000.0), 56.4413);
        assert_eq!(round4(distance(15.0, 37.0, a.0, a.1) / 1000.0), 190.4424);
    }

    #[test]
    fn round_trips_stay_in_their_cell() {
        for (lon, lat) in [
            (-180.0, LAT_MIN),
            (180.0, LAT_MAX),
            (0.0, 0.0),
            (116.4, 39.9),
        ] {
            let (x, y) = decode(encode(lon, lat));
            assert!(
                (x - lon).abs() < 1e-5 && (y - lat).abs() < 1e-5,
                "{lon},{lat}"
            );
        }
    }

    #[test]
    fn candidate_rects_cover_the_shape() {
        // A circle across the antimeridian splits in two.
        let r = circle_rects(179.99, 10.0, 5_000.0);
        assert_eq!(r.len(), 2);
        assert!(r.iter().any(|r| r.lon_hi == LON_MAX) && r.iter().any(|r| r.lon_lo == LON_MIN));
        // Every point on the circle is inside the rectangle.
        let (lon, lat, radius) = (116.4, 39.9, 50_000.0);
        let rect = circle_rects(lon, lat, radius)[0];
        for i in 0..360 {
            let bearing = f64::from(i).to_radians();
            let (x, y) = destination(lon, lat, bearing, radius * 0.999_999);
            assert!(
                (rect.lon_lo..=rect.lon_hi).contains(&x)
                    && (rect.lat_lo..=rect.lat_hi).contains(&y),
                "bearing {i}"
            );
        }
        // A huge circle covers every longitude.
        assert_eq!(circle_rects(0.0, 80.0, 2_000_000.0)[0].lon_lo, LON_MIN);
        assert_eq!(box_rects(10.0, 0.0, 1e8, 1_000.0)[0].lon_hi, LON_MAX);
    }

    #[test]
    fn density_steps_grow_coarser_with_radius() {
        assert_eq!(density_step(0.0), STEP);
        assert!(density_step(5_000.0) > density_step(500_000.0));
        assert_eq!(density_step(1e9), 1);
    }

    fn destination(lon: f64, lat: f64, bearing: f64, d: f64) -> (f64, f64) {
        let (p1, l1, a) = (lat.to_radians(), lon.to_radians(), d / EARTH_RADIUS_M);
        let p2 = (p1.sin() * a.cos() + p1.cos() * a.sin() * bearing.cos()).asin();
        let l2 = l1 + (bearing.sin() * a.sin() * p1.cos()).atan2(a.cos() - p1.sin() * p2.sin());
        (l2.to_degrees(), p2.to_degrees())
    }

    /// Every stored point whose position lies in a rectangle has its score in one of the
    /// rectangle's cover ranges, and the cover stays a handful of ranges.
    #[test]
    fn cover_holds_every_point_of_the_rectangle() {
        let rects = [
            Rect {
                lon_lo: 2.0,
                lon_hi: 2.7,
                lat_lo: 48.6,
                lat_hi: 49.1,
            },
            Rect {
                lon_lo: -180.0,
                lon_hi: 180.0,
                lat_lo: -85.1,
                lat_hi: 85.1,
            },
            Rect {
                lon_lo: 179.99,
                lon_hi: 180.0,
                lat_lo: -0.01,
                lat_hi: 0.01,
            },
            Rect {
                lon_lo: -10.0,
                lon_hi: 30.0,
                lat_lo: 35.0,
                lat_hi: 60.0,
            },
        ];
        for r in rects {
            let ranges = cover(&r);
            assert!(
                !ranges.is_empty() && ranges.len() <= COVER_CELLS as usize + 2,
                "{r:?}"
            );
            for i in 0..2_000u32 {
                let fx = f64::from(i % 50) / 49.0;
                let fy = f64::from(i / 50) / 39.0;
                let lon = r.lon_lo + (r.lon_hi - r.lon_lo) * fx;
                let lat = (r.lat_lo + (r.lat_hi - r.lat_lo) * fy).clamp(LAT_MIN, LAT_MAX);
                let score = encode(lon.clamp(LON_MIN, LON_MAX), lat);
                let (x, y) = decode(score);
                if x < r.lon_lo || x > r.lon_hi || y < r.lat_lo || y > r.lat_hi {
                    continue;
                }
                assert!(
                    ranges.iter().any(|(lo, hi)| (*lo..*hi).contains(&score)),
                    "{lon},{lat} in {r:?}"
                );
            }
        }
    }
}
