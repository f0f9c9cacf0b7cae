//! Nearby-search scenarios (docs/api.md "Nearby search").
//!
//! The dense scenarios check every answer against a brute-force scan over all points, using
//! the gateway's ports of Redis's geohash and haversine (themselves checked against Redis's
//! documented values in `geo::logic` and against a live server below).

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use redis_gateway::geo::logic;
use serde_json::{json, Value};

use crate::common::{command_calls, settings, shared_redis, Backend, Gateway};

crate::contract_tests!(
    put_get_move_delete,
    batch_upsert_counts_added_and_updated,
    distance_between_members,
    sicily_searches_match_redis_docs,
    dense_radius_search_equals_brute_force,
    dense_box_desc_and_member_searches_equal_brute_force,
    reserved_and_unknown_names,
    bad_inputs_are_problems,
    layers_are_bounded,
    layers_are_listed_by_name_with_their_places,
    a_layer_gone_leaves_the_listing,
    a_listing_of_layers_never_shows_one_missing_nor_misses_one,
);

const PALERMO: (f64, f64) = (13.361389, 38.115556);
const CATANIA: (f64, f64) = (15.087269, 37.502669);

async fn put(gw: &Gateway, layer: &str, member: &str, (lon, lat): (f64, f64)) -> (u16, Value) {
    let (status, body) = gw
        .put(
            &format!("/v1/geo/{layer}/{member}"),
            json!({"lon": lon, "lat": lat}),
        )
        .await;
    (status.as_u16(), body)
}

async fn put_get_move_delete(backend: Backend) {
    let gw = Gateway::start(backend).await;
    let (status, body) = put(&gw, "sicily", "Palermo", PALERMO).await;
    assert_eq!(status, 201, "{body}");
    // GEOPOS / GEOHASH values from the Redis documentation.
    assert_eq!(
        body,
        json!({"layer": "sicily", "member": "Palermo", "lon": 13.361389338970184,
               "lat": 38.1155563954963, "geohash": "sqc8b49rny0", "created": true})
    );
    let (status, again) = put(&gw, "sicily", "Palermo", PALERMO).await;
    assert_eq!(status, 200, "re-sending unchanged is 200");
    assert_eq!(again["created"], false);

    let (status, got) = gw.get("/v1/geo/sicily/Palermo").await;
    assert_eq!(status, 200);
    assert_eq!(
        got,
        json!({"layer": "sicily", "member": "Palermo", "lon": 13.361389338970184,
               "lat": 38.1155563954963, "geohash": "sqc8b49rny0"})
    );

    let (status, moved) = put(&gw, "sicily", "Palermo", CATANIA).await;
    assert_eq!((status, &moved["created"]), (200, &json!(false)));
    assert_eq!(moved["geohash"], "sqdtr74hyu0");
    let (_, got) = gw.get("/v1/geo/sicily/Palermo").await;
    assert_eq!(got["geohash"], "sqdtr74hyu0");
    assert_eq!(got["lon"], moved["lon"]);

    let (status, _) = gw.delete("/v1/geo/sicily/Palermo").await;
    assert_eq!(status, 204);
    let (status, body) = gw.delete("/v1/geo/sicily/Palermo").await;
    assert_eq!((status.as_u16(), &body["code"]), (404, &json!("not_found")));
    let (status, _) = gw.get("/v1/geo/sicily/Palermo").await;
    assert_eq!(status, 404);
    let (status, _) = gw.get("/v1/geo/nowhere/Palermo").await;
    assert_eq!(status, 404);
    // Deleted, then new again.
    let (status, _) = put(&gw, "sicily", "Palermo", PALERMO).await;
    assert_eq!(status, 201);

    // The limits themselves are accepted.
    for (i, corner) in [(-180.0, -85.05112878), (180.0, 85.05112878), (0.0, 0.0)]
        .into_iter()
        .enumerate()
    {
        let (status, body) = put(&gw, "edges", &format!("c{i}"), corner).await;
        assert_eq!(status, 201, "{corner:?}: {body}");
        assert_eq!(body["geohash"].as_str().unwrap().len(), 11);
    }
}

async fn batch_upsert_counts_added_and_updated(backend: Backend) {
    let gw = Gateway::start(backend).await;
    put(&gw, "b", "old", (1.0, 1.0)).await;
    let (status, body) = gw
        .post(
            "/v1/geo/b",
            json!({"places": [
                {"member": "old", "lon": 2.0, "lat": 2.0},
                {"member": "a", "lon": 3.0, "lat": 3.0},
                {"member": "c", "lon": 4.0, "lat": 4.0},
                {"member": "a", "lon": 5.0, "lat": 5.0},
            ]}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body, json!({"added": 2, "updated": 2}));
    let (_, a) = gw.get("/v1/geo/b/a").await;
    assert!(
        (a["lon"].as_f64().unwrap() - 5.0).abs() < 1e-5,
        "last wins: {a}"
    );
    let (_, old) = gw.get("/v1/geo/b/old").await;
    assert!((old["lat"].as_f64().unwrap() - 2.0).abs() < 1e-5, "{old}");

    let (status, body) = gw.post("/v1/geo/b", json!({"places": []})).await;
    assert_eq!(
        (status.as_u16(), &body["code"]),
        (400, &json!("invalid_argument"))
    );
    let big: Vec<Value> = (0..1001)
        .map(|i| json!({"member": format!("m{i}"), "lon": 0.0, "lat": 0.0}))
        .collect();
    let (status, body) = gw.post("/v1/geo/b", json!({ "places": big })).await;
    assert_eq!(
        (status.as_u16(), &body["code"]),
        (413, &json!("payload_too_large"))
    );
    let full: Vec<Value> = (0..1000)
        .map(|i| json!({"member": format!("m{i}"), "lon": 0.001 * f64::from(i), "lat": 0.0}))
        .collect();
    let (status, body) = gw.post("/v1/geo/b", json!({ "places": full })).await;
    assert_eq!(
        (status.as_u16(), body),
        (200, json!({"added": 1000, "updated": 0}))
    );

    // One bad place refuses the whole batch.
    for bad in [
        json!({"member": "ok", "lon": 181.0, "lat": 0.0}),
        json!({"member": "ok", "lon": 0.0, "lat": 85.06}),
        json!({"member": "nearby", "lon": 0.0, "lat": 0.0}),
        json!({"member": "a b", "lon": 0.0, "lat": 0.0}),
        json!({"member": "ok", "lon": "1", "lat": 0.0}),
        json!({"member": "ok", "lat": 0.0}),
        json!({"member": "ok", "lon": 0.0, "lat": 0.0, "x": 1}),
    ] {
        let body = json!({"places": [{"member": "fresh", "lon": 0.0, "lat": 0.0}, bad.clone()]});
        let (status, problem) = gw.post("/v1/geo/b", body).await;
        assert_eq!(status, 400, "{bad} → {problem}");
    }
    let (status, _) = gw.get("/v1/geo/b/fresh").await;
    assert_eq!(status, 404, "nothing of a refused batch is written");
}

async fn distance_between_members(backend: Backend) {
    let gw = Gateway::start(backend).await;
    put(&gw, "sicily", "Palermo", PALERMO).await;
    put(&gw, "sicily", "Catania", CATANIA).await;
    // GEODIST values from the Redis documentation.
    let (status, body) = gw
        .get("/v1/geo/sicily/distance?from=Palermo&to=Catania")
        .await;
    assert_eq!(status, 200);
    assert_eq!(
        body,
        json!({"from": "Palermo", "to": "Catania", "distance": 166.2742, "unit": "km"})
    );
    let (_, m) = gw
        .get("/v1/geo/sicily/distance?from=Palermo&to=Catania&unit=m")
        .await;
    assert_eq!(m["distance"], 166_274.151_6);
    let (_, mi) = gw
        .get("/v1/geo/sicily/distance?from=Catania&to=Palermo&unit=mi")
        .await;
    assert_eq!(mi["distance"], 103.3182);
    assert_eq!(mi["unit"], "mi");
    let (_, ft) = gw
        .get("/v1/geo/sicily/distance?from=Palermo&to=Catania&unit=ft")
        .await;
    assert_eq!(ft["distance"], 545_518.87);
    let (_, zero) = gw
        .get("/v1/geo/sicily/distance?from=Palermo&to=Palermo")
        .await;
    assert_eq!(zero["distance"], 0.0);
    for q in ["from=Palermo&to=Rome", "from=Rome&to=Palermo"] {
        let (status, body) = gw.get(&format!("/v1/geo/sicily/distance?{q}")).await;
        assert_eq!((status.as_u16(), &body["code"]), (404, &json!("not_found")));
    }
    let (status, _) = gw
        .get("/v1/geo/elsewhere/distance?from=Palermo&to=Catania")
        .await;
    assert_eq!(status, 404);
    for q in [
        "from=Palermo",
        "to=Catania",
        "from=Palermo&to=Catania&unit=yd",
        "from=a b&to=c",
    ] {
        let (status, _) = gw.get(&format!("/v1/geo/sicily/distance?{q}")).await;
        assert_eq!(status, 400, "{q}");
    }
}

fn members(body: &Value) -> Vec<String> {
    body["results"]
        .as_array()
        .unwrap_or_else(|| panic!("no results: {body}"))
        .iter()
        .map(|r| r["member"].as_str().unwrap().to_owned())
        .collect()
}

fn distances(body: &Value) -> Vec<f64> {
    body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["distance"].as_f64().unwrap())
        .collect()
}

async fn sicily_searches_match_redis_docs(backend: Backend) {
    let gw = Gateway::start(backend).await;
    put(&gw, "sicily", "Palermo", PALERMO).await;
    put(&gw, "sicily", "Catania", CATANIA).await;
    put(&gw, "sicily", "edge1", (12.758489, 38.788135)).await;
    put(&gw, "sicily", "edge2", (17.241510, 38.788135)).await;

    // GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200 km ASC WITHDIST
    let (status, body) = gw
        .get("/v1/geo/sicily/nearby?lon=15&lat=37&radius=200")
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["layer"], "sicily");
    assert_eq!(body["unit"], "km");
    assert_eq!(body["center"], json!({"lon": 15.0, "lat": 37.0}));
    assert_eq!(members(&body), ["Catania", "Palermo"]);
    assert_eq!(distances(&body), [56.4413, 190.4424]);
    let first = &body["results"][0];
    assert_eq!(first["geohash"], "sqdtr74hyu0");
    let (_, catania) = gw.get("/v1/geo/sicily/Catania").await;
    assert_eq!(first["lon"], catania["lon"]);
    assert_eq!(first["lat"], catania["lat"]);

    // GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 400 400 km ASC WITHDIST
    let (_, body) = gw
        .get("/v1/geo/sicily/nearby?lon=15&lat=37&shape=box&width=400&height=400")
        .await;
    assert_eq!(members(&body), ["Catania", "Palermo", "edge2", "edge1"]);
    assert_eq!(distances(&body), [56.4413, 190.4424, 279.7403, 279.7405]);

    let (_, desc) = gw
        .get("/v1/geo/sicily/nearby?lon=15&lat=37&radius=200&order=desc&count=1")
        .await;
    assert_eq!(members(&desc), ["Palermo"]);
    let (_, miles) = gw
        .get("/v1/geo/sicily/nearby?lon=15&lat=37&radius=118.34&unit=mi")
        .await;
    assert_eq!(miles["unit"], "mi");
    assert_eq!(members(&miles), ["Catania", "Palermo"]);
    let (_, short) = gw
        .get("/v1/geo/sicily/nearby?lon=15&lat=37&radius=118.33&unit=mi")
        .await;
    assert_eq!(
        members(&short),
        ["Catania"],
        "Palermo is at 118.3357 mi: {short}"
    );

    // Around a member: itself excluded unless asked for.
    let (status, body) = gw
        .get("/v1/geo/sicily/nearby?member=Catania&radius=200")
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(members(&body), ["Palermo"]);
    assert_eq!(distances(&body), [166.2742]);
    assert_eq!(body["center"]["lon"], catania["lon"]);
    let (_, with_self) = gw
        .get("/v1/geo/sicily/nearby?member=Catania&radius=200&include_self=true&count=1")
        .await;
    assert_eq!(members(&with_self), ["Catania"]);
    assert_eq!(distances(&with_self), [0.0]);
    let (_, one) = gw
        .get("/v1/geo/sicily/nearby?member=Catania&radius=200&count=1")
        .await;
    assert_eq!(
        members(&one),
        ["Palermo"],
        "count applies after leaving self out"
    );

    // Empty or unknown layers answer with no results; an unknown centre member is 404.
    let (status, body) = gw.get("/v1/geo/none/nearby?lon=15&lat=37&radius=200").await;
    assert_eq!((status.as_u16(), body["results"].clone()), (200, json!([])));
    let (status, body) = gw
        .get("/v1/geo/sicily/nearby?lon=-100&lat=0&radius=1")
        .await;
    assert_eq!((status.as_u16(), body["results"].clone()), (200, json!([])));
    let (status, body) = gw.get("/v1/geo/sicily/nearby?member=Rome&radius=200").await;
    assert_eq!((status.as_u16(), &body["code"]), (404, &json!("not_found")));
    let (status, _) = gw.get("/v1/geo/none/nearby?member=Rome&radius=200").await;
    assert_eq!(status, 404);
}

/// `n` points uniformly spread about 100 km × 100 km around Beijing (116.40, 39.90).
fn beijing(seed: u64, n: usize) -> Vec<(String, f64, f64)> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..n)
        .map(|i| {
            let lon = 116.40 + rng.random_range(-0.57..0.57);
            let lat = 39.90 + rng.random_range(-0.44..0.44);
            // Six decimals, as clients send them; the oracle uses the same values.
            let lon = (lon * 1e6f64).round() / 1e6;
            let lat = (lat * 1e6f64).round() / 1e6;
            (format!("p{i}"), lon, lat)
        })
        .collect()
}

async fn load(gw: &Gateway, layer: &str, points: &[(String, f64, f64)]) {
    for chunk in points.chunks(1000) {
        let places: Vec<Value> = chunk
            .iter()
            .map(|(m, lon, lat)| json!({"member": m, "lon": lon, "lat": lat}))
            .collect();
        let (status, body) = gw
            .post(&format!("/v1/geo/{layer}"), json!({ "places": places }))
            .await;
        assert_eq!(status, 200, "{body}");
    }
}

/// The stored positions of `points`, as Redis keeps them.
fn stored(points: &[(String, f64, f64)]) -> Vec<(String, f64, f64)> {
    points
        .iter()
        .map(|(m, lon, lat)| {
            let (x, y) = logic::decode(logic::encode(*lon, *lat));
            (m.clone(), x, y)
        })
        .collect()
}

/// A brute-force search: Redis's tests over every point, sorted. None when some point sits
/// within a centimetre of the boundary, where float rounding may legitimately decide.
fn brute_force(
    points: &[(String, f64, f64)],
    inside: impl Fn(f64, f64) -> Option<f64>,
    near_edge: impl Fn(f64, f64) -> bool,
    desc: bool,
    count: usize,
) -> Option<Vec<(String, f64)>> {
    if points.iter().any(|(_, x, y)| near_edge(*x, *y)) {
        return None;
    }
    let mut hits: Vec<(String, f64)> = points
        .iter()
        .filter_map(|(m, x, y)| inside(*x, *y).map(|d| (m.clone(), d)))
        .collect();
    hits.sort_by(|a, b| a.1.total_cmp(&b.1));
    if desc {
        hits.reverse();
    }
    hits.truncate(count);
    Some(hits)
}

fn assert_same(body: &Value, expected: &[(String, f64)], unit_m: f64, what: &str) {
    let got: Vec<(String, f64)> = members(body).into_iter().zip(distances(body)).collect();
    let want: Vec<(String, f64)> = expected
        .iter()
        .map(|(m, d)| (m.clone(), logic::round4(d / unit_m)))
        .collect();
    assert_eq!(got.len(), want.len(), "{what}: lengths differ");
    assert_eq!(got, want, "{what}");
}

fn circle_oracle(
    points: &[(String, f64, f64)],
    (cx, cy): (f64, f64),
    radius_m: f64,
    desc: bool,
    count: usize,
) -> Option<Vec<(String, f64)>> {
    brute_force(
        points,
        |x, y| Some(logic::distance(cx, cy, x, y)).filter(|d| *d <= radius_m),
        |x, y| (logic::distance(cx, cy, x, y) - radius_m).abs() < 0.01,
        desc,
        count,
    )
}

async fn dense_radius_search_equals_brute_force(backend: Backend) {
    let gw = Gateway::start(backend).await;
    let points = beijing(7, 20_000);
    load(&gw, "bj", &points).await;
    let oracle = stored(&points);
    let mut rng = StdRng::seed_from_u64(8);
    let mut checked = 0;
    // Centres inside the cloud, at its edge and outside it (sparse: the search must widen to
    // the full radius); radii from tiny to all-covering; counts from 1 to 1000.
    let mut centres: Vec<(f64, f64)> = (0..12)
        .map(|_| {
            let lon = 116.40 + rng.random_range(-0.5..0.5);
            let lat = 39.90 + rng.random_range(-0.4..0.4);
            ((lon * 1e6f64).round() / 1e6, (lat * 1e6f64).round() / 1e6)
        })
        .collect();
    centres.extend([
        (116.40, 39.90),
        (115.83, 39.46),
        (117.2, 39.9),
        (116.4, 41.0),
    ]);
    for (i, (cx, cy)) in centres.into_iter().enumerate() {
        let (radius, unit, unit_m, count) = [
            (5.0, "km", 1000.0, 20),
            (2.0, "km", 1000.0, 1),
            (300.0, "m", 1.0, 20),
            (5.0, "km", 1000.0, 1000),
            (10.0, "mi", 1609.34, 50),
            (150.0, "km", 1000.0, 20),
            (60_000.0, "ft", 0.3048, 100),
        ][i % 7];
        let url = format!(
            "/v1/geo/bj/nearby?lon={cx}&lat={cy}&radius={radius}&unit={unit}&count={count}"
        );
        let (status, body) = gw.get(&url).await;
        assert_eq!(status, 200, "{url}: {body}");
        assert_eq!(body["unit"], unit);
        if let Some(want) = circle_oracle(&oracle, (cx, cy), radius * unit_m, false, count) {
            assert_same(&body, &want, unit_m, &url);
            checked += 1;
        }
        // Per-result coordinates and geohash are the stored ones.
        for r in body["results"].as_array().unwrap().iter().take(3) {
            let i: usize = r["member"].as_str().unwrap()[1..].parse().unwrap();
            let score = logic::encode(points[i].1, points[i].2);
            assert_eq!(r["lon"], oracle[i].1);
            assert_eq!(r["lat"], oracle[i].2);
            assert_eq!(r["geohash"], logic::geohash(score));
        }
    }
    assert!(
        checked >= 14,
        "only {checked} queries were away from the boundary"
    );
}

async fn dense_box_desc_and_member_searches_equal_brute_force(backend: Backend) {
    let gw = Gateway::start(backend).await;
    let points = beijing(11, 20_000);
    load(&gw, "bj", &points).await;
    let oracle = stored(&points);
    let mut checked = 0;
    for (k, (cx, cy)) in [(116.40, 39.90), (116.2, 40.1), (116.9, 39.5)]
        .into_iter()
        .enumerate()
    {
        // Farthest first.
        let url = format!("/v1/geo/bj/nearby?lon={cx}&lat={cy}&radius=3&order=desc&count=15");
        let (_, body) = gw.get(&url).await;
        if let Some(want) = circle_oracle(&oracle, (cx, cy), 3000.0, true, 15) {
            assert_same(&body, &want, 1000.0, &url);
            checked += 1;
        }
        // Boxes, both orders.
        for order in ["asc", "desc"] {
            let (w, h) = (6.0 + k as f64, 4.0);
            let url = format!(
                "/v1/geo/bj/nearby?lon={cx}&lat={cy}&shape=box&width={w}&height={h}&order={order}&count=40"
            );
            let (status, body) = gw.get(&url).await;
            assert_eq!(status, 200, "{url}: {body}");
            let (w_m, h_m) = (w * 1000.0, h * 1000.0);
            let want = brute_force(
                &oracle,
                |x, y| logic::in_box(w_m, h_m, cx, cy, x, y),
                |x, y| {
                    (logic::lat_distance(y, cy) - h_m / 2.0).abs() < 0.01
                        || (logic::distance(x, cy, cx, cy) - w_m / 2.0).abs() < 0.01
                },
                order == "desc",
                40,
            );
            if let Some(want) = want {
                assert_same(&body, &want, 1000.0, &url);
                checked += 1;
            }
        }
    }
    // Around members, with and without themselves.
    for i in [0usize, 4_242, 19_999] {
        let (m, cx, cy) = oracle[i].clone();
        let want = circle_oracle(&oracle, (cx, cy), 2500.0, false, 26).expect("not on an edge");
        assert_eq!(want[0].0, m, "the member is its own nearest");
        let url = format!("/v1/geo/bj/nearby?member={m}&radius=2.5&count=25");
        let (status, body) = gw.get(&url).await;
        assert_eq!(status, 200, "{url}: {body}");
        assert_eq!(body["center"], json!({"lon": cx, "lat": cy}));
        assert_same(&body, &want[1..26], 1000.0, &url);
        let url =
            format!("/v1/geo/bj/nearby?member={m}&radius=2500&unit=m&count=25&include_self=true");
        let (_, body) = gw.get(&url).await;
        assert_same(&body, &want[..25], 1.0, &url);
        checked += 2;
    }
    assert!(
        checked >= 12,
        "only {checked} queries were away from the boundary"
    );
}

async fn reserved_and_unknown_names(backend: Backend) {
    let gw = Gateway::start(backend).await;
    for path in ["/v1/geo/l/nearby", "/v1/geo/l/distance"] {
        let (status, body) = gw.put(path, json!({"lon": 1.0, "lat": 1.0})).await;
        assert_eq!(
            (status.as_u16(), &body["code"]),
            (400, &json!("invalid_argument")),
            "{path}"
        );
        let (status, _) = gw.delete(path).await;
        assert_eq!(status, 400, "{path}");
    }
    let long = "x".repeat(129);
    for path in [
        "/v1/geo/l/a%20b".to_owned(),
        "/v1/geo/a%7Bb%7D/m".to_owned(),
        format!("/v1/geo/l/{long}"),
        format!("/v1/geo/{long}/m"),
    ] {
        let (status, body) = gw.put(&path, json!({"lon": 1.0, "lat": 1.0})).await;
        assert_eq!(
            (status.as_u16(), &body["code"]),
            (400, &json!("invalid_argument")),
            "{path}"
        );
        let (status, _) = gw.get(&path).await;
        assert_eq!(status, 400, "{path}");
    }
    let (status, _) = gw.get("/v1/geo/l/nearby?member=a%20b&radius=1").await;
    assert_eq!(status, 400);
    let (status, body) = gw.get("/v1/geo/l/distance?from=nearby&to=a").await;
    assert_eq!(
        (status.as_u16(), body["detail"].as_str()),
        (
            400,
            Some("member name \"nearby\" is reserved (it is a route)")
        ),
        "the detail names the member as the client wrote it"
    );
    let (status, _) = gw
        .put("/v1/geo/l/x.y_z:1@2-3", json!({"lon": 1, "lat": 1}))
        .await;
    assert_eq!(status, 201, "every allowed character");
}

async fn bad_inputs_are_problems(backend: Backend) {
    let gw = Gateway::start(backend).await;
    put(&gw, "l", "m", (10.0, 10.0)).await;
    for body in [
        json!({"lon": 180.000001, "lat": 0.0}),
        json!({"lon": -181.0, "lat": 0.0}),
        json!({"lon": 0.0, "lat": 85.0511288}),
        json!({"lon": 0.0, "lat": -90.0}),
        json!({"lon": 0.0}),
        json!({"lon": "1", "lat": 0.0}),
        json!({"lon": 0.0, "lat": 0.0, "alt": 3}),
        json!(null),
        // Bodies are objects; an array in field order is not one.
        json!([1.0, 1.0]),
    ] {
        let (status, problem) = gw.put("/v1/geo/l/p", body.clone()).await;
        assert_eq!(status, 400, "{body} → {problem}");
        assert_eq!(problem["code"], "invalid_argument");
    }
    let base = "/v1/geo/l/nearby?";
    for q in [
        "lon=0&lat=0",                                     // no radius, no box
        "lon=0&lat=0&shape=box&width=1",                   // box without height
        "lon=0&lat=0&width=1&height=1",                    // box without shape=box
        "lon=0&lat=0&radius=1&shape=box&width=1&height=1", // both
        "lon=0&lat=0&radius=1&shape=hexagon",
        "lon=0&lat=0&radius=0",
        "lon=0&lat=0&radius=-1",
        "lon=0&lat=0&radius=NaN",
        "lon=0&lat=0&radius=inf",
        "lon=0&lat=0&radius=40001",
        "lon=0&lat=0&radius=abc",
        "lon=0&lat=0&shape=box&width=0&height=1",
        "lon=0&lat=0&radius=1&unit=yd",
        "lon=0&lat=0&radius=1&unit=KM",
        "lon=0&lat=0&radius=1&count=0",
        "lon=0&lat=0&radius=1&count=1001",
        "lon=0&lat=0&radius=1&count=100000",
        "lon=0&lat=0&radius=1&count=-1",
        "lon=0&lat=0&radius=1&order=up",
        "lon=0&lat=0&radius=1&include_self=true",
        "lon=0&lat=0&radius=1&bogus=1",
        "lon=181&lat=0&radius=1",
        "lon=0&lat=86&radius=1",
        "lon=0&radius=1",
        "lat=0&radius=1",
        "radius=1",
        "lon=0&lat=0&member=m&radius=1",
        "member=m&radius=1&include_self=maybe",
    ] {
        let (status, problem) = gw.get(&format!("{base}{q}")).await;
        assert_eq!(status, 400, "{q} → {problem}");
        assert_eq!(problem["code"], "invalid_argument", "{q}");
    }
    for body in [
        json!([[{"member": "p", "lon": 1.0, "lat": 1.0}]]),
        json!({"places": [["p", 1.0, 1.0]]}),
    ] {
        let (status, problem) = gw.post("/v1/geo/l", body.clone()).await;
        assert_eq!(status, 400, "{body} → {problem}");
        assert_eq!(problem["code"], "invalid_argument");
    }
    assert_eq!(gw.get("/v1/geo/l/p").await.0, 404, "a refused body wrote");
    let (status, _) = gw.get(&format!("{base}lon=0&lat=0&radius=40000")).await;
    assert_eq!(status, 200, "the cap itself is allowed");
    let (status, body) = gw.get(&format!("{base}member=m&radius=1&count=1000")).await;
    assert_eq!((status.as_u16(), body["results"].clone()), (200, json!([])));
    let (status, body) = gw.post("/v1/geo/l/nearby", json!({})).await;
    assert_eq!(
        (status.as_u16(), &body["code"]),
        (405, &json!("method_not_allowed"))
    );
}

/// The Redis backend's widening search answers exactly what the plain
/// `GEOSEARCH … COUNT n WITHDIST` answers (radius and box, by point and by member), on a dense
/// layer, asked of the server directly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_nearby_equals_plain_geosearch() {
    let s = settings(Backend::Redis);
    let key = format!("{}geo:{{dense}}", s.key_prefix);
    let gw = Gateway::with_settings(s).await;
    let points = beijing(3, 50_000);
    load(&gw, "dense", &points).await;
    let redis = shared_redis();
    let mut rng = StdRng::seed_from_u64(4);
    for i in 0..60 {
        let lon = format!("{:.6}", 116.40 + rng.random_range(-0.6..0.6));
        let lat = format!("{:.6}", 39.90 + rng.random_range(-0.5..0.5));
        let count = [1, 20, 100, 1000][i % 4];
        let radius = ["0.5", "2", "5", "20", "0.05"][i % 5];
        let raw = redis
            .cli(&[
                "GEOSEARCH",
                &key,
                "FROMLONLAT",
                &lon,
                &lat,
                "BYRADIUS",
                radius,
                "km",
                "ASC",
                "COUNT",
                &count.to_string(),
                "WITHDIST",
            ])
            .expect("redis-cli answers");
        let lines: Vec<&str> = raw.lines().filter(|l| !l.is_empty()).collect();
        let want: Vec<(String, f64)> = lines
            .chunks(2)
            .map(|c| (c[0].to_owned(), c[1].parse().unwrap()))
            .collect();
        let url = format!("/v1/geo/dense/nearby?lon={lon}&lat={lat}&radius={radius}&count={count}");
        let (status, body) = gw.get(&url).await;
        assert_eq!(status, 200, "{url}: {body}");
        let got: Vec<(String, f64)> = members(&body).into_iter().zip(distances(&body)).collect();
        assert_eq!(got, want, "{url}");
        // Boxes, nearest first (the circle-then-filter shortcut) and farthest first.
        let (w, h) = [("1", "0.6"), ("4", "4"), ("10", "3"), ("0.2", "8")][i % 4];
        let order = if i % 3 == 0 { "DESC" } else { "ASC" };
        let raw = redis
            .cli(&[
                "GEOSEARCH",
                &key,
                "FROMLONLAT",
                &lon,
                &lat,
                "BYBOX",
                w,
                h,
                "km",
                order,
                "COUNT",
                &count.to_string(),
                "WITHDIST",
            ])
            .expect("redis-cli answers");
        let lines: Vec<&str> = raw.lines().filter(|l| !l.is_empty()).collect();
        let want: Vec<(String, f64)> = lines
            .chunks(2)
            .map(|c| (c[0].to_owned(), c[1].parse().unwrap()))
            .collect();
        let url = format!(
            "/v1/geo/dense/nearby?lon={lon}&lat={lat}&shape=box&width={w}&height={h}&count={count}&order={}",
            order.to_lowercase()
        );
        let (_, body) = gw.get(&url).await;
        let got: Vec<(String, f64)> = members(&body).into_iter().zip(distances(&body)).collect();
        assert_eq!(got, want, "{url}");
        // By member, self included: FROMMEMBER.
        let m = &points[i * 797].0;
        let raw = redis
            .cli(&[
                "GEOSEARCH",
                &key,
                "FROMMEMBER",
                m,
                "BYRADIUS",
                radius,
                "km",
                "ASC",
                "COUNT",
                &count.to_string(),
                "WITHDIST",
            ])
            .expect("redis-cli answers");
        let lines: Vec<&str> = raw.lines().filter(|l| !l.is_empty()).collect();
        let want: Vec<(String, f64)> = lines
            .chunks(2)
            .map(|c| (c[0].to_owned(), c[1].parse().unwrap()))
            .collect();
        let url = format!(
            "/v1/geo/dense/nearby?member={m}&radius={radius}&count={count}&include_self=true"
        );
        let (_, body) = gw.get(&url).await;
        let got: Vec<(String, f64)> = members(&body).into_iter().zip(distances(&body)).collect();
        assert_eq!(got, want, "{url}");
    }
    // Positions and geohashes are Redis's own GEOPOS / GEOHASH.
    for (m, _, _) in points.iter().step_by(5_001) {
        let (_, view) = gw.get(&format!("/v1/geo/dense/{m}")).await;
        let hash = redis.cli(&["GEOHASH", &key, m]).unwrap();
        assert_eq!(view["geohash"], hash.trim(), "{m}");
        let pos = redis.cli(&["GEOPOS", &key, m]).unwrap();
        let pos: Vec<f64> = pos.lines().map(|l| l.parse().unwrap()).collect();
        assert_eq!(view["lon"].as_f64().unwrap(), pos[0], "{m}");
        assert_eq!(view["lat"].as_f64().unwrap(), pos[1], "{m}");
    }
}

/// The dense-layer shortcut is really taken: one density count and one small search when the
/// estimate holds enough points (circle or box), widening when it does not, the plain query
/// for `desc`. On a layer of more than 5,000 places no GEOSEARCH runs at all: the gateway
/// counts the covering cells and reads a few pages of them (docs/performance.md "Redis time per
/// request").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_dense_search_takes_the_shortcut() {
    let redis = crate::common::RedisProcess::start(&[], false);
    let mut s = settings(Backend::Redis);
    s.store = redis_gateway::config::StoreChoice::Redis(redis.url());
    let gw = Gateway::with_settings(s).await;
    load(&gw, "bj", &beijing(5, 5_000)).await;
    let run = |url: &'static str| {
        let gw = &gw;
        let redis = &redis;
        async move {
            redis.cli(&["CONFIG", "RESETSTAT"]).unwrap();
            let (status, body) = gw.get(url).await;
            assert_eq!(status, 200, "{body}");
            (
                command_calls(redis, "zcount"),
                command_calls(redis, "geosearch"),
            )
        }
    };
    // In the cloud: the estimate is right the first time.
    let dense = run("/v1/geo/bj/nearby?lon=116.4&lat=39.9&radius=5&count=20").await;
    assert_eq!(dense, (1, 1));
    // 120 km north of the cloud: the first radii hold nothing, so it widens.
    let (zcount, searches) = run("/v1/geo/bj/nearby?lon=116.4&lat=41&radius=200&count=20").await;
    assert_eq!(zcount, 1);
    assert!(searches > 1, "{searches} searches");
    // A box: one circle, filtered by the box test.
    let boxed = run("/v1/geo/bj/nearby?lon=116.4&lat=39.9&shape=box&width=12&height=8").await;
    assert_eq!(boxed, (1, 1));
    // Farthest first has no shortcut.
    assert_eq!(
        run("/v1/geo/bj/nearby?lon=116.4&lat=39.9&radius=5&count=20&order=desc").await,
        (0, 1)
    );
    // Past 5,000 places: counted cells and one read of each, never a GEOSEARCH.
    load(&gw, "bj2", &beijing(6, 20_000)).await;
    let (_, searches) = run("/v1/geo/bj2/nearby?lon=116.4&lat=39.9&radius=5&count=20").await;
    assert_eq!(searches, 0);
    let reads = command_calls(&redis, "zrangebyscore");
    assert!((1..=16).contains(&reads), "{reads} cell reads");
}

/// A layer holds at most `GATEWAY_GEO_MAX_PLACES` places: a write that would add past it is
/// `409 layer_full` and writes nothing; moves of existing members still work.
async fn layers_are_bounded(backend: Backend) {
    let mut settings = crate::common::settings(backend);
    settings.geo.max_places = 3;
    let gw = Gateway::with_settings(settings).await;
    let places = |names: &[&str]| {
        let places: Vec<Value> = names
            .iter()
            .map(|n| json!({"member": n, "lon": PALERMO.0, "lat": PALERMO.1}))
            .collect();
        json!({ "places": places })
    };
    let (status, body) = gw.post("/v1/geo/small", places(&["a", "b"])).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = gw.post("/v1/geo/small", places(&["a", "c", "d"])).await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["code"], "layer_full");
    let (status, _) = gw.get("/v1/geo/small/c").await;
    assert_eq!(status, 404, "a refused batch writes nothing");
    assert_eq!(put(&gw, "small", "c", CATANIA).await.0, 201);
    let (status, body) = put(&gw, "small", "d", CATANIA).await;
    assert_eq!((status, body["code"].clone()), (409, json!("layer_full")));
    assert_eq!(
        put(&gw, "small", "a", CATANIA).await.0,
        200,
        "moves still fit"
    );
    let (status, body) = gw.post("/v1/geo/small", places(&["a", "b", "c"])).await;
    assert_eq!((status.as_u16(), body["added"].clone()), (200, json!(0)));
    // A member sent twice is one new place: three of four places fill the last free one.
    gw.post("/v1/geo/twice", places(&["a", "b"])).await;
    let (status, body) = gw
        .post("/v1/geo/twice", places(&["a", "b", "c", "c"]))
        .await;
    assert_eq!(
        (status.as_u16(), body["added"].clone()),
        (200, json!(1)),
        "{body}"
    );
}

/// Every layer of the listing, following the cursors with pages of `limit`, as `name:places`.
async fn layers(gw: &Gateway, limit: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut after = String::new();
    for _ in 0..10_000 {
        let (status, page) = gw
            .get(&format!("/v1/geo?limit={limit}&after={after}"))
            .await;
        assert_eq!(status, 200, "{page}");
        let listed = page["layers"].as_array().unwrap();
        assert!(listed.len() <= limit, "{page}");
        out.extend(
            listed
                .iter()
                .map(|l| format!("{}:{}", l["layer"].as_str().unwrap(), l["places"])),
        );
        match page["next"].as_str() {
            Some(n) => after = n.to_owned(),
            None => return out,
        }
    }
    panic!("the listing never ends");
}

async fn layers_are_listed_by_name_with_their_places(backend: Backend) {
    let gw = Gateway::start(backend).await;
    let (status, empty) = gw.get("/v1/geo").await;
    assert_eq!(
        (status.as_u16(), empty),
        (200, json!({"layers": [], "next": null}))
    );
    put(&gw, "b.2", "x", PALERMO).await;
    put(&gw, "b.2", "y", CATANIA).await;
    put(&gw, "A:1", "x", PALERMO).await;
    let places: Vec<Value> = ["p", "q", "r"]
        .iter()
        .map(|m| json!({"member": m, "lon": PALERMO.0, "lat": PALERMO.1}))
        .collect();
    let (status, _) = gw.post("/v1/geo/c-3", json!({ "places": places })).await;
    assert_eq!(status, 200);
    for limit in [1, 2, 3, 100] {
        assert_eq!(
            layers(&gw, limit).await,
            ["A:1:1", "b.2:2", "c-3:3"],
            "pages of {limit}"
        );
    }
    let (_, first) = gw.get("/v1/geo?limit=1").await;
    assert_eq!(first["layers"], json!([{"layer": "A:1", "places": 1}]));
    let (_, rest) = gw
        .get(&format!(
            "/v1/geo?after={}",
            first["next"].as_str().unwrap()
        ))
        .await;
    assert_eq!(
        rest,
        json!({"layers": [{"layer": "b.2", "places": 2}, {"layer": "c-3", "places": 3}], "next": null})
    );
    let (_, whole) = gw.get("/v1/geo?limit=3&after=").await;
    assert!(
        whole["next"].is_null(),
        "a full last page has no next: {whole}"
    );
    for query in [
        "limit=0",
        "limit=1001",
        "limit=x",
        "after=a%20b",
        "after=%7Bx%7D",
        "other=1",
    ] {
        let (status, problem) = gw.get(&format!("/v1/geo?{query}")).await;
        assert_eq!(
            (status.as_u16(), problem["code"].as_str()),
            (400, Some("invalid_argument")),
            "{query}: {problem}"
        );
    }
}

/// A layer whose last place is deleted, or that expired, is no longer listed; a write brings it
/// back. Expiry is the memory store's clock moved by hand, and on Redis the layer's key made to
/// expire at once (a real Redis expires keys on its own clock, which no test moves: the wait is
/// the few milliseconds it takes).
async fn a_layer_gone_leaves_the_listing(backend: Backend) {
    let mut s = settings(backend);
    s.geo.retention_days = 1;
    let prefix = s.key_prefix.clone();
    let gw = Gateway::with_settings(s).await;
    put(&gw, "emptied", "x", PALERMO).await;
    put(&gw, "kept", "x", PALERMO).await;
    put(&gw, "old", "x", PALERMO).await;
    assert_eq!(layers(&gw, 10).await, ["emptied:1", "kept:1", "old:1"]);
    let (status, _) = gw.delete("/v1/geo/emptied/x").await;
    assert_eq!(status, 204);
    assert_eq!(layers(&gw, 10).await, ["kept:1", "old:1"]);
    let (_, page) = gw.get("/v1/geo?limit=1").await;
    assert_eq!(
        page["layers"],
        json!([{"layer": "kept", "places": 1}]),
        "{page}"
    );

    if backend == Backend::Memory {
        gw.pass(std::time::Duration::from_secs(12 * 3600)).await;
        put(&gw, "kept", "y", CATANIA).await;
        gw.pass(std::time::Duration::from_secs(12 * 3600 + 1)).await;
    } else {
        let key = format!("{prefix}geo:{{old}}");
        let server = crate::common::servers(backend)[0];
        assert_eq!(
            server.cli(&["-c", "pexpire", &key, "1"]).unwrap().trim(),
            "1"
        );
        // Redis expires the key by its own clock, which the test does not move.
        let within = std::time::Duration::from_secs(5);
        crate::common::poll::eventually(within, "the layer's key expires", || async {
            let left = server.cli(&["-c", "exists", &key]).unwrap();
            (left.trim() == "0").then_some(())
        })
        .await;
        put(&gw, "kept", "y", CATANIA).await;
    }
    assert_eq!(layers(&gw, 10).await, ["kept:2"]);
    put(&gw, "emptied", "z", CATANIA).await;
    put(&gw, "old", "z", CATANIA).await;
    assert_eq!(layers(&gw, 10).await, ["emptied:1", "kept:2", "old:1"]);
}

/// Layers written while listings page through: a listing holds every layer that held places
/// before it began, never one twice, never one never written.
async fn a_listing_of_layers_never_shows_one_missing_nor_misses_one(backend: Backend) {
    let mut s = settings(backend);
    s.store_timeout = std::time::Duration::from_secs(10);
    let gw = Gateway::with_settings(s).await;
    let names: Vec<String> = (0..60).map(|i| format!("l{i:02}")).collect();
    let writes = futures::future::join_all(names.iter().map(|l| {
        let gw = &gw;
        async move {
            let (status, body) = put(gw, l, "x", PALERMO).await;
            assert_eq!(status, 201, "{body}");
        }
    }));
    let reads = async {
        for _ in 0..12 {
            let paths: Vec<String> = names.iter().map(|l| format!("/v1/geo/{l}/x")).collect();
            let found = futures::future::join_all(paths.iter().map(|p| gw.get(p))).await;
            let before: Vec<&String> = names
                .iter()
                .zip(found)
                .filter(|(_, (status, _))| *status == 200)
                .map(|(l, _)| l)
                .collect();
            let listed = layers(&gw, 7).await;
            let seen: std::collections::HashSet<&str> = listed
                .iter()
                .map(|l| l.strip_suffix(":1").expect("one place each"))
                .collect();
            assert_eq!(seen.len(), listed.len(), "a layer listed twice: {listed:?}");
            for l in before {
                assert!(
                    seen.contains(l.as_str()),
                    "{l} held a place before the listing: {listed:?}"
                );
            }
            for l in &seen {
                assert!(names.iter().any(|n| n == l), "{l} was never written");
            }
        }
    };
    futures::join!(writes, reads);
    assert_eq!(layers(&gw, 1000).await.len(), names.len());
}

/// The layer index's sweep (docs/geo.md "Listing layers"), on a private Redis through the
/// scripts themselves: an entry leaves only an hour past its expiry, from both sorted sets, a
/// listing's page and a write each sweeping a bounded number; a write's expiry there never
/// moves back; both keys live an hour past the last layer entered.
#[tokio::test]
async fn the_layer_index_sweeps_only_what_is_gone_for_good() {
    use fred::prelude::*;
    // As the gateway loads them: each after the scripts' shared head.
    let add = concat!(
        include_str!("../../src/geo/redis/geo_index_common.lua"),
        include_str!("../../src/geo/redis/geo_index_add.lua")
    );
    let page = concat!(
        include_str!("../../src/geo/redis/geo_index_common.lua"),
        include_str!("../../src/geo/redis/geo_index_page.lua")
    );
    let (redis, client, add) = crate::common::fred_on_private_redis(add).await;
    let page: String = client.script_load(page).await.unwrap();
    let keys = || {
        vec![
            "geor:{layers}".to_owned(),
            "geor:{layers}:expiry".to_owned(),
        ]
    };
    let now = chrono::Utc::now().timestamp();
    let entered = |layer: &str, expiry: i64| {
        let (client, add) = (client.clone(), add.clone());
        let args = vec![
            layer.to_owned(),
            expiry.to_string(),
            "3600".into(),
            "2".into(),
        ];
        async move {
            let _: i64 = client.evalsha(add, keys(), args).await.unwrap();
        }
    };
    // Entries gone for good, as a store left them.
    let left = |layer: &str, expiry: i64| {
        redis.cli(&["zadd", "geor:{layers}", "0", layer]).unwrap();
        let expiry = expiry.to_string();
        redis
            .cli(&["zadd", "geor:{layers}:expiry", &expiry, layer])
            .unwrap();
    };
    left("a-gone", now - 7_200);
    left("b-gone", now - 3_700);
    left("c-gone", now - 3_601);
    let listed = |key: &str| {
        let names = redis.cli(&["zrange", key, "0", "-1"]).unwrap();
        names
            .split_whitespace()
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    // A write sweeps two of them.
    entered("d-recent", now - 60).await;
    for key in keys() {
        assert_eq!(listed(&key), ["c-gone", "d-recent"], "{key}");
    }
    entered("e-live", now + 1_000).await;
    // A later write's earlier expiry does not move the entry back.
    entered("e-live", now - 7_200).await;
    assert_eq!(listed("geor:{layers}:expiry"), ["d-recent", "e-live"]);
    left("f-gone", now - 4_000);
    let page_of = |after: &'static str| {
        let (client, page) = (client.clone(), page.clone());
        async move {
            let names: Vec<String> = client
                .evalsha(page, keys(), vec![after, "10", "3600", "100"])
                .await
                .unwrap();
            names
        }
    };
    assert_eq!(
        page_of("").await,
        ["d-recent", "e-live"],
        "a page sweeps first"
    );
    assert_eq!(listed("geor:{layers}"), ["d-recent", "e-live"]);
    assert_eq!(page_of("d-recent").await, ["e-live"]);
    for key in keys() {
        let ttl: i64 = redis.cli(&["ttl", &key]).unwrap().trim().parse().unwrap();
        assert!((4_500..=4_600).contains(&ttl), "{key} lives {ttl} s");
    }
}
