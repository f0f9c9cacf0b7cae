//! Geo layers on Redis geo sets: GEOADD, ZSCORE, ZREM, GEODIST, and searches through
//! `geo_nearby.lua` (GEOSEARCH, made cheap on dense layers for nearest-first searches; see the
//! script). On a layer of more than [`SEARCH_MAX_CANDIDATES`] places a search is finished here
//! instead, counting (`geo_count.lua`) and paging (`geo_scan.lua`) over the cells covering the
//! area, so no search holds Redis for long (docs/performance.md "Redis time per request").

mod layers;

use std::collections::HashSet;
use std::sync::LazyLock;

use fred::prelude::*;
use fred::types::geo::GeoUnit;
use fred::types::scripts::Script;

use crate::store::keys::Keys;
use crate::store::redis::{map_err, RedisStore};

use crate::geo::logic;
use crate::geo::{
    Center, Found, GeoStore, Hit, LayerBound, LayerFull, Layers, Order, Place, Point, Search,
    Shape, Unit, UnknownCentre,
};
use crate::store::error::StoreError;
use crate::types::Name;

static PUT: LazyLock<Script> = LazyLock::new(|| Script::from_lua(include_str!("geo_put.lua")));
static NEARBY: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("geo_nearby.lua")));
static SCAN: LazyLock<Script> = LazyLock::new(|| Script::from_lua(include_str!("geo_scan.lua")));
static COUNT: LazyLock<Script> = LazyLock::new(|| Script::from_lua(include_str!("geo_count.lua")));

/// Most places of a layer searched with one GEOSEARCH, and most candidates read in one scan
/// of a nearest-first search; past it the gateway pages over the area. GEOSEARCH costs Redis
/// ~0.3 µs per candidate read plus the sort of the matches: 5,000 stay near 2 ms.
const SEARCH_MAX_CANDIDATES: usize = 5_000;

/// Members per `geo_scan.lua` call: 2,000 with scores cost Redis ~3 ms on a loaded machine,
/// 1,000 about half.
const SCAN_PAGE: usize = 1_000;

fn geo_unit(unit: Unit) -> GeoUnit {
    match unit {
        Unit::M => GeoUnit::Meters,
        Unit::Km => GeoUnit::Kilometers,
        Unit::Mi => GeoUnit::Miles,
        Unit::Ft => GeoUnit::Feet,
    }
}

/// Scores are integers below 2^53, exact in a double however Redis prints them.
fn score_of(v: &Value) -> Option<u64> {
    match v {
        Value::Integer(i) => u64::try_from(*i).ok(),
        other => other
            .as_str()
            .and_then(|s| s.parse::<f64>().ok())
            .map(|f| f as u64),
    }
}

fn unexpected(what: &str) -> StoreError {
    StoreError::Internal(format!("unexpected reply from geo_nearby.lua: {what}"))
}

fn parse_hit(v: Value) -> Result<Hit, StoreError> {
    let Value::Array(fields) = v else {
        return Err(unexpected("a hit is not an array"));
    };
    let [member, distance, score] =
        <[Value; 3]>::try_from(fields).map_err(|_| unexpected("a hit does not have 3 fields"))?;
    Ok(Hit {
        member: member
            .as_string()
            .ok_or_else(|| unexpected("member is not a string"))?,
        distance: distance
            .as_str()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| unexpected("distance is not a number"))?,
        score: score_of(&score).ok_or_else(|| unexpected("score is not a number"))?,
    })
}

impl GeoStore for RedisStore {
    /// One script for the whole batch (`geo_put.lua`): the bound check and the GEOADD are one
    /// step. Redis counts each new member once, so a member repeated in the batch is added once
    /// and then updated, as the memory backend counts it.
    async fn geo_put_many(
        &self,
        layer: &Name,
        places: &[Place],
        bound: LayerBound,
    ) -> Result<Result<u64, LayerFull>, StoreError> {
        // The distinct members go first, apart from the places: `geo_put.lua` says why.
        let mut seen = HashSet::with_capacity(places.len());
        let members: Vec<&str> = places
            .iter()
            .map(|p| p.member.as_str())
            .filter(|m| seen.insert(*m))
            .collect();
        let mut args: Vec<String> = Vec::with_capacity(3 + members.len() + 3 * places.len());
        args.push(bound.max_places.to_string());
        args.push(bound.expire_at.to_string());
        args.push(members.len().to_string());
        args.extend(members.iter().map(|m| (*m).to_owned()));
        for p in places {
            // Rust prints the shortest text that parses back to the same double.
            args.push(p.at.lon.to_string());
            args.push(p.at.lat.to_string());
            args.push(p.member.as_str().to_owned());
        }
        // Listed first, in another slot ([`layers`]).
        self.index_layer(layer, bound.expire_at).await?;
        let added: i64 = self.pool.script(&PUT, self.keys.geo(layer), args).await?;
        Ok(u64::try_from(added).map_err(|_| LayerFull))
    }

    async fn geo_layers(
        &self,
        after: Option<Name>,
        limit: usize,
        examine: usize,
    ) -> Result<Layers, StoreError> {
        self.list_layers(after, limit, examine).await
    }

    async fn geo_get(&self, layer: &Name, member: &Name) -> Result<Option<u64>, StoreError> {
        let score: Value = self
            .pool
            .at(&self.keys.geo(layer))?
            .zscore(self.keys.geo(layer), member.as_str())
            .await
            .map_err(map_err)?;
        Ok(score_of(&score))
    }

    async fn geo_remove(&self, layer: &Name, member: &Name) -> Result<bool, StoreError> {
        let removed: i64 = self
            .pool
            .at(&self.keys.geo(layer))?
            .zrem(self.keys.geo(layer), member.as_str())
            .await
            .map_err(map_err)?;
        Ok(removed == 1)
    }

    async fn geo_distance(
        &self,
        layer: &Name,
        from: &Name,
        to: &Name,
        unit: Unit,
    ) -> Result<Option<f64>, StoreError> {
        let d: Option<String> = self
            .pool
            .at(&self.keys.geo(layer))?
            .geodist(
                self.keys.geo(layer),
                from.as_str(),
                to.as_str(),
                Some(geo_unit(unit)),
            )
            .await
            .map_err(map_err)?;
        d.map(|d| {
            d.parse()
                .map_err(|_| StoreError::Internal(format!("GEODIST replied {d:?}")))
        })
        .transpose()
    }

    async fn geo_search(
        &self,
        layer: &Name,
        search: &Search,
    ) -> Result<Result<Found, UnknownCentre>, StoreError> {
        let (mode, a, b, score) = match &search.center {
            Center::Point(p) => (
                "point",
                p.lon.to_string(),
                p.lat.to_string(),
                logic::encode(p.lon, p.lat).to_string(),
            ),
            Center::Member(m) => ("member", m.to_string(), String::new(), String::new()),
        };
        let (by, size, height, reach_m) = match search.shape {
            Shape::Radius(r) => ("BYRADIUS", r, String::new(), r * search.unit.meters()),
            Shape::Box { width, height } => (
                "BYBOX",
                width,
                height.to_string(),
                width.max(height) / 2.0 * search.unit.meters(),
            ),
        };
        let args: Vec<String> = vec![
            mode.to_owned(),
            a,
            b,
            score,
            by.to_owned(),
            size.to_string(),
            height,
            search.unit.as_str().to_owned(),
            search.unit.meters().to_string(),
            match search.order {
                Order::Asc => "ASC",
                Order::Desc => "DESC",
            }
            .to_owned(),
            search.count.to_string(),
            logic::density_step(reach_m).to_string(),
            SEARCH_MAX_CANDIDATES.to_string(),
        ];
        let reply: Vec<Value> = self
            .pool
            .script(&NEARBY, vec![self.keys.geo(layer)], args)
            .await?;
        let mut reply = reply.into_iter();
        let status = reply.next().and_then(|v| v.as_i64());
        if status == Some(0) {
            return match &search.center {
                Center::Member(m) => Ok(Err(UnknownCentre(m.clone()))),
                Center::Point(_) => Err(unexpected("a point search found no centre")),
            };
        }
        let center = match &search.center {
            Center::Point(p) => *p,
            Center::Member(_) => reply
                .next()
                .as_ref()
                .and_then(score_of)
                .map(Point::stored)
                .ok_or_else(|| unexpected("no centre score"))?,
        };
        if status == Some(2) {
            let hits = self.big_search(layer, search, center).await?;
            return Ok(Ok(Found { center, hits }));
        }
        let hits = match reply.last() {
            Some(Value::Array(hits)) => {
                hits.into_iter().map(parse_hit).collect::<Result<_, _>>()?
            }
            Some(Value::Null) | None => Vec::new(),
            Some(_) => return Err(unexpected("hits are not an array")),
        };
        Ok(Ok(Found { center, hits }))
    }
}

/// Places found by a paged read: distance from the centre (m), member, score.
type Candidates = Vec<(f64, (String, u64))>;

impl RedisStore {
    /// A search on a layer of more than [`SEARCH_MAX_CANDIDATES`] places, where one GEOSEARCH
    /// could read the whole layer: the candidates are the places in the geohash cells covering
    /// the area (`logic::cover`), counted exactly first (`geo_count.lua`, O(log n) per cell) and
    /// read [`SCAN_PAGE`] at a time (`geo_scan.lua`); GEOSEARCH's own distance or box test and
    /// ordering are applied here (`geo::logic`, shared with the memory backend), so the answer
    /// is GEOSEARCH's. Nearest first reads a circle expected to hold a few times `count`
    /// places, widening it until it holds `count` matches (then every match outside it is
    /// farther than each of them), so a small search reads a few cells, not the area. The
    /// reads are separate calls: a place moved meanwhile may be seen at either position, as
    /// with any read racing a write.
    async fn big_search(
        &self,
        layer: &Name,
        search: &Search,
        center: Point,
    ) -> Result<Vec<Hit>, StoreError> {
        let key = self.keys.geo(layer);
        let test = logic::within(center, search.shape, search.unit);
        let whole = covering(center, search.shape, search.unit);
        let count = u64::from(search.count);
        let mut hits = match search.order {
            Order::Desc => self.scan(&key, &whole, &test).await?,
            Order::Asc => self.nearest(&key, search, center, &whole, &test).await?,
        };
        logic::first_by_distance(&mut hits, search.order, count as usize);
        Ok(hits
            .into_iter()
            .map(|(d, (member, score))| Hit {
                member,
                distance: logic::round4(d / search.unit.meters()),
                score,
            })
            .collect())
    }

    /// Nearest first: the matches within a circle that holds at least `count` of them, or all
    /// matches when the area holds fewer.
    async fn nearest(
        &self,
        key: &str,
        search: &Search,
        center: Point,
        whole: &[(u64, u64)],
        test: &impl Fn(f64, f64) -> Option<f64>,
    ) -> Result<Candidates, StoreError> {
        let count = u64::from(search.count);
        let m = search.unit.meters();
        let reach_m = match search.shape {
            Shape::Radius(r) => r * m,
            Shape::Box { width, height } => (width + height) / 2.0 * m,
        };
        let total = self.count_in(key, whole).await?;
        if total <= SEARCH_MAX_CANDIDATES as u64 || count == 0 {
            return self.scan(key, whole, test).await;
        }
        // Sized as if the places spread evenly over the area; corrected by exact counts.
        let mut r_m = reach_m * (4.0 * count as f64 / total as f64).sqrt();
        let mut widened = false;
        for _ in 0..64 {
            if r_m >= reach_m {
                break;
            }
            let ranges = covering(center, Shape::Radius(r_m), Unit::M);
            let inside = self.count_in(key, &ranges).await?;
            if inside < count {
                widened = true;
                r_m *= 2.0;
                continue;
            }
            // A cluster around the centre: narrow before reading, while never widened.
            if !widened && inside > 16 * count && inside > SCAN_PAGE as u64 && r_m > 1.0 {
                r_m /= 4.0;
                continue;
            }
            let hits = self
                .scan(key, &ranges, |x, y| test(x, y).filter(|d| *d <= r_m))
                .await?;
            if hits.len() as u64 >= count {
                return Ok(hits);
            }
            widened = true;
            r_m *= 2.0;
        }
        self.scan(key, whole, test).await
    }

    /// The places in `ranges` of scores (`geo_count.lua`).
    async fn count_in(&self, key: &str, ranges: &[(u64, u64)]) -> Result<u64, StoreError> {
        let args: Vec<String> = ranges
            .iter()
            .flat_map(|(lo, hi)| [lo.to_string(), hi.to_string()])
            .collect();
        self.pool.script(&COUNT, vec![key], args).await
    }

    /// The places in `ranges` of scores that `test` keeps, with its distance, read
    /// [`SCAN_PAGE`] per call (`geo_scan.lua`).
    async fn scan(
        &self,
        key: &str,
        ranges: &[(u64, u64)],
        test: impl Fn(f64, f64) -> Option<f64>,
    ) -> Result<Candidates, StoreError> {
        let mut hits = Vec::new();
        let (mut at, mut from, mut skip) = (1usize, String::new(), 0u64);
        while at <= ranges.len() {
            let mut args: Vec<String> = vec![
                SCAN_PAGE.to_string(),
                at.to_string(),
                from.clone(),
                skip.to_string(),
            ];
            for (lo, hi) in ranges {
                args.push(lo.to_string());
                args.push(hi.to_string());
            }
            let reply: Vec<Value> = self.pool.script(&SCAN, vec![key], args).await?;
            let mut reply = reply.into_iter();
            let mut next = || reply.next().ok_or_else(|| unexpected_scan("a short reply"));
            at = next()?
                .as_u64()
                .ok_or_else(|| unexpected_scan("no resume range"))? as usize;
            from = next()?
                .as_string()
                .ok_or_else(|| unexpected_scan("no resume score"))?;
            skip = next()?
                .as_u64()
                .ok_or_else(|| unexpected_scan("no resume skip"))?;
            let rest: Vec<Value> = reply.collect();
            for pair in rest.chunks_exact(2) {
                let member = pair[0]
                    .as_string()
                    .ok_or_else(|| unexpected_scan("member is not a string"))?;
                let score = score_of(&pair[1]).ok_or_else(|| unexpected_scan("bad score"))?;
                let (x, y) = logic::decode(score);
                if let Some(d) = test(x, y) {
                    hits.push((d, (member, score)));
                }
            }
        }
        Ok(hits)
    }
}

/// Score ranges of the geohash cells covering a search shape around `center`.
fn covering(center: Point, shape: Shape, unit: Unit) -> Vec<(u64, u64)> {
    let mut ranges: Vec<(u64, u64)> = logic::shape_rects(center, shape, unit)
        .iter()
        .flat_map(logic::cover)
        .collect();
    logic::join(&mut ranges)
}

fn unexpected_scan(what: &str) -> StoreError {
    StoreError::Internal(format!("unexpected reply from geo_scan.lua: {what}"))
}

/// The keys of this domain (every one under its hash tag: see `crate::store::keys`).
impl Keys {
    /// A geo layer: one geo set (a sorted set scored by 52-bit geohash), so every geo
    /// operation is single-key.
    pub(crate) fn geo(&self, layer: &Name) -> String {
        format!("{}geo:{{{layer}}}", self.prefix)
    }
}

#[cfg(test)]
mod key_tests {
    use super::*;
    use crate::store::keys::hash_tag;
    use crate::types::testing::name;

    #[test]
    fn a_layer_is_one_key() {
        let layer = name("cafes:bj");
        let key = Keys::new("gw:").geo(&layer);
        assert_eq!(key, "gw:geo:{cafes:bj}");
        assert_eq!(hash_tag(&key), "cafes:bj");
    }
}
