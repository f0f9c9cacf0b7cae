//! Geo layers in memory: per layer, the members' 52-bit geohashes and an R-tree (`rstar`) over
//! the positions those decode to, so a search reads only the candidates inside the shape's
//! bounding rectangle and then applies Redis's own distance and box tests (`geo::logic`).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ops::Bound;

use rstar::primitives::GeomWithData;
use rstar::{RTree, AABB};

use crate::geo::logic;
use crate::geo::{
    Center, Found, GeoStore, Hit, LayerBound, LayerFull, Layers, Place, Point, Search, Shape, Unit,
    UnknownCentre,
};
use crate::store::error::StoreError;
use crate::store::memory::{Locked, MemoryStore, Purge};
use crate::store::slots::Slot;
use crate::types::{Name, Walk};

/// A stored point: its decoded position, with (member, 52-bit geohash) as data.
type Entry = GeomWithData<[f64; 2], (String, u64)>;

/// This domain's state in a memory store.
static STATE: Slot<Locked<State>> = Slot::new();

#[derive(Debug, Default)]
struct State {
    /// By name: the listing reads them in order.
    layers: BTreeMap<Name, Layer>,
}

#[derive(Debug, Default)]
struct Layer {
    scores: HashMap<String, u64>,
    tree: RTree<Entry>,
    /// Unix seconds; the layer is dropped at the next purge after it.
    expire_at: i64,
}

fn entry(member: &str, score: u64) -> Entry {
    let (lon, lat) = logic::decode(score);
    GeomWithData::new([lon, lat], (member.to_owned(), score))
}

impl Layer {
    /// Adds or moves a member; true when it is new.
    fn put(&mut self, member: &str, at: Point) -> bool {
        let score = logic::encode(at.lon, at.lat);
        let old = self.scores.insert(member.to_owned(), score);
        if let Some(old) = old {
            self.tree.remove(&entry(member, old));
        }
        self.tree.insert(entry(member, score));
        old.is_none()
    }

    fn search(&self, center: Point, shape: Shape, unit: Unit) -> Vec<(f64, &Entry)> {
        let test = logic::within(center, shape, unit);
        let mut hits = Vec::new();
        for r in logic::shape_rects(center, shape, unit) {
            let aabb = AABB::from_corners([r.lon_lo, r.lat_lo], [r.lon_hi, r.lat_hi]);
            for e in self.tree.locate_in_envelope(aabb) {
                let [x, y] = *e.geom();
                if let Some(d) = test(x, y) {
                    hits.push((d, e));
                }
            }
        }
        hits
    }
}

impl GeoStore for MemoryStore {
    async fn geo_put_many(
        &self,
        layer: &Name,
        places: &[Place],
        bound: LayerBound,
    ) -> Result<Result<u64, LayerFull>, StoreError> {
        let mut s = self.state(&STATE);
        let now = self.clock().now_s();
        s.drop_expired(layer, now);
        let l = s.layers.entry(layer.clone()).or_default();
        let fresh: HashSet<&str> = places
            .iter()
            .map(|p| p.member.as_str())
            .filter(|m| !l.scores.contains_key(*m))
            .collect();
        if !fresh.is_empty() && (l.scores.len() + fresh.len()) as u64 > bound.max_places {
            if l.scores.is_empty() {
                s.layers.remove(layer);
            }
            return Ok(Err(LayerFull));
        }
        l.expire_at = bound.expire_at;
        Ok(Ok(places
            .iter()
            .filter(|p| l.put(p.member.as_str(), p.at))
            .count() as u64))
    }

    async fn geo_layers(
        &self,
        after: Option<Name>,
        limit: usize,
        examine: usize,
    ) -> Result<Layers, StoreError> {
        let s = self.state(&STATE);
        let now = self.clock().now_s();
        let from = after.map_or(Bound::Unbounded, Bound::Excluded);
        let mut entries = s.layers.range((from, Bound::Unbounded));
        let read: Vec<(&Name, &Layer)> = entries.by_ref().take(examine).collect();
        let more = entries.next().is_some();
        // Past its expiry and not yet purged: gone, as on Redis.
        let kept = read
            .iter()
            .map(|(_, l)| {
                (l.expire_at > now && !l.scores.is_empty()).then_some(l.scores.len() as u64)
            })
            .collect();
        let names = read.into_iter().map(|(name, _)| name.clone()).collect();
        let page = Walk::new(None, limit, examine).take(names, kept, more);
        Ok(page.expect("one read of `examine` entries ends the walk"))
    }

    async fn geo_get(&self, layer: &Name, member: &Name) -> Result<Option<u64>, StoreError> {
        let s = self.state(&STATE);
        Ok(s.live(layer, self.clock().now_s())
            .and_then(|l| l.scores.get(member.as_str()).copied()))
    }

    async fn geo_remove(&self, layer: &Name, member: &Name) -> Result<bool, StoreError> {
        let mut s = self.state(&STATE);
        s.drop_expired(layer, self.clock().now_s());
        let Some(l) = s.layers.get_mut(layer) else {
            return Ok(false);
        };
        let Some(score) = l.scores.remove(member.as_str()) else {
            return Ok(false);
        };
        l.tree.remove(&entry(member.as_str(), score));
        // Like Redis, an emptied layer disappears.
        if l.scores.is_empty() {
            s.layers.remove(layer);
        }
        Ok(true)
    }

    async fn geo_distance(
        &self,
        layer: &Name,
        from: &Name,
        to: &Name,
        unit: Unit,
    ) -> Result<Option<f64>, StoreError> {
        let s = self.state(&STATE);
        let Some(l) = s.live(layer, self.clock().now_s()) else {
            return Ok(None);
        };
        let (Some(a), Some(b)) = (l.scores.get(from.as_str()), l.scores.get(to.as_str())) else {
            return Ok(None);
        };
        let (a, b) = (Point::stored(*a), Point::stored(*b));
        let d = logic::distance(a.lon, a.lat, b.lon, b.lat);
        Ok(Some(logic::round4(d / unit.meters())))
    }

    async fn geo_search(
        &self,
        layer: &Name,
        search: &Search,
    ) -> Result<Result<Found, UnknownCentre>, StoreError> {
        let s = self.state(&STATE);
        let l = s.live(layer, self.clock().now_s());
        let center = match &search.center {
            Center::Point(p) => *p,
            Center::Member(m) => match l.and_then(|l| l.scores.get(m.as_str())) {
                Some(score) => Point::stored(*score),
                None => return Ok(Err(UnknownCentre(m.clone()))),
            },
        };
        let Some(l) = l else {
            return Ok(Ok(Found {
                center,
                hits: Vec::new(),
            }));
        };
        let mut hits = l.search(center, search.shape, search.unit);
        logic::first_by_distance(&mut hits, search.order, search.count as usize);
        let hits = hits
            .into_iter()
            .map(|(d, e)| Hit {
                member: e.data.0.clone(),
                distance: logic::round4(d / search.unit.meters()),
                score: e.data.1,
            })
            .collect();
        Ok(Ok(Found { center, hits }))
    }
}

impl State {
    /// `layer`, unless it is past its expiry (and waits for the next purge): gone, as on Redis.
    fn live(&self, layer: &Name, now: i64) -> Option<&Layer> {
        self.layers.get(layer).filter(|l| l.expire_at > now)
    }

    /// Drops `layer` if it is past its expiry, so a write starts it anew, as on Redis.
    fn drop_expired(&mut self, layer: &Name, now: i64) {
        if self.layers.get(layer).is_some_and(|l| l.expire_at <= now) {
            self.layers.remove(layer);
        }
    }
}

impl Purge for State {
    /// Drops layers past their expiry (a write moves it forward, like Redis's EXPIREAT).
    fn purge(&mut self, now: i64) {
        self.layers.retain(|_, l| l.expire_at > now);
    }
}
