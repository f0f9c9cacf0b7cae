//! Nearby search on geo sets: layers of places (upsert, batch upsert, get, delete, distance) and
//! search around a point or a member, by radius or by box, nearest or farthest first.
//!
//! One geo set per layer (`geo:{layer}`), so every operation touches one key and one slot.
//! Both backends store Redis's 52-bit geohash and answer from the cell centre it decodes to
//! (see [`logic`]), so positions, geohashes and distances agree to the last digit.

mod http;
pub mod logic;
mod memory;
mod redis;
pub mod search;
mod settings;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

pub use http::{Domain, GeoState};
pub use settings::{Flags, Settings};

use crate::store::error::StoreError;
use crate::types::{Listing, Name, Refused};

/// Member names that would collide with the fixed routes `/v1/geo/{layer}/nearby|distance`.
pub const RESERVED_MEMBERS: [&str; 2] = ["nearby", "distance"];

/// Distance units, with the factors Redis uses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
#[schema(as = DistanceUnit)]
pub enum Unit {
    M,
    #[default]
    Km,
    Mi,
    Ft,
}

impl Unit {
    /// Metres per unit (Redis `extractUnitOrReply`: a mile is 1609.34 m there).
    pub fn meters(self) -> f64 {
        match self {
            Self::M => 1.0,
            Self::Km => 1000.0,
            Self::Mi => 1609.34,
            Self::Ft => 0.3048,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::M => "m",
            Self::Km => "km",
            Self::Mi => "mi",
            Self::Ft => "ft",
        }
    }
}

/// Nearest first (`asc`) or farthest first (`desc`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Order {
    #[default]
    Asc,
    Desc,
}

/// A validated position: lon in [-180, 180], lat in Redis's [-85.05112878, 85.05112878].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    pub lon: f64,
    pub lat: f64,
}

impl Point {
    pub fn new(lon: f64, lat: f64) -> Result<Self, Refused> {
        if !(logic::LON_MIN..=logic::LON_MAX).contains(&lon) {
            return Err(Refused::Invalid(format!(
                "lon must be within [-180, 180], got {lon}"
            )));
        }
        if !(logic::LAT_MIN..=logic::LAT_MAX).contains(&lat) {
            return Err(Refused::Invalid(format!(
                "lat must be within [-85.05112878, 85.05112878], got {lat}"
            )));
        }
        Ok(Self { lon, lat })
    }

    /// Where a stored point really is: the centre of its 52-bit geohash cell.
    pub fn stored(score: u64) -> Self {
        let (lon, lat) = logic::decode(score);
        Self { lon, lat }
    }
}

/// A member name the API accepts anywhere a member is named (path, query, body): a [`Name`]
/// other than the reserved ones, which are 400 everywhere.
pub fn writable_member(member: &Name) -> Result<(), Refused> {
    if RESERVED_MEMBERS.contains(&member.as_str()) {
        return Err(Refused::Invalid(format!(
            "member name \"{member}\" is reserved (it is a route)"
        )));
    }
    Ok(())
}

/// A search around a member the layer does not hold (only a by-member search can be refused so).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownCentre(pub Name);

/// What a write may make of a layer: how many places it may hold, and until when it is kept
/// (each write moves the expiry forward), so layers named by anonymous callers stay bounded.
#[derive(Debug, Clone, Copy)]
pub struct LayerBound {
    pub max_places: u64,
    /// Unix seconds.
    pub expire_at: i64,
}

/// A write refused because the layer would hold more than its bound's `max_places`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LayerFull;

/// One place of a batch.
#[derive(Debug, Clone)]
pub struct Place {
    pub member: Name,
    pub at: Point,
}

/// Where a search is centred.
#[derive(Debug, Clone)]
pub enum Center {
    Point(Point),
    Member(Name),
}

/// The area searched, in the search's unit.
#[derive(Debug, Clone, Copy)]
pub enum Shape {
    Radius(f64),
    Box { width: f64, height: f64 },
}

/// A validated nearby search. `count` is what the store returns at most (the handler asks for
/// one more when it drops the centre member itself).
#[derive(Debug, Clone)]
pub struct Search {
    pub center: Center,
    pub shape: Shape,
    pub unit: Unit,
    pub order: Order,
    pub count: u32,
}

/// One search result.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub member: String,
    /// In the search's unit, rounded to 4 decimals as Redis prints it.
    pub distance: f64,
    /// The stored 52-bit geohash.
    pub score: u64,
}

/// A search's answer.
#[derive(Debug, Clone)]
pub struct Found {
    pub center: Point,
    pub hits: Vec<Hit>,
}

/// A page of the layer listing, as the store read it: each layer with its number of places.
pub type Layers = Listing<Name, u64>;

/// How long past its expiry a layer stays in the listing's index (skipped by listings, as a
/// layer that no longer exists), before a listing sweeps it out: its expiry is kept by the
/// layer's own node on a Cluster, the index's by another, and their clocks may differ.
pub const INDEX_SLACK_S: i64 = 3_600;

crate::store::store_trait! {
    /// What a geo backend must do. Every method is one store round trip.
    pub(crate) trait GeoStore {
        /// Adds or moves every place in order and keeps the layer until `bound.expire_at`; returns
        /// how many members were new, or [`LayerFull`] (and writes nothing) when the new members
        /// would take the layer past `bound.max_places`.
        async fn geo_put_many(&self, layer: &Name, places: &[Place], bound: LayerBound)
            -> Result<Result<u64, LayerFull>, StoreError> = "geo.geo_put_many";
        /// Up to `limit` layers after `after` by name, each with its number of places,
        /// examining at most `examine` entries of the index the writes keep: never a layer that
        /// does not exist (expired, or emptied by deletes), never one missed.
        async fn geo_layers(&self, after: Option<Name>, limit: usize, examine: usize)
            -> Result<Layers, StoreError> = "geo.layers";
        /// The stored 52-bit geohash of `member`, if present.
        async fn geo_get(&self, layer: &Name, member: &Name) -> Result<Option<u64>, StoreError> = "geo.geo_get";
        /// Removes `member`; true when it was there.
        async fn geo_remove(&self, layer: &Name, member: &Name) -> Result<bool, StoreError> = "geo.geo_remove";
        /// Distance between two members in `unit` (4 decimals), or None when either is missing.
        async fn geo_distance(&self, layer: &Name, from: &Name, to: &Name, unit: Unit)
            -> Result<Option<f64>, StoreError> = "geo.geo_distance";
        /// Runs a search; a search around a member the layer does not hold is [`UnknownCentre`].
        async fn geo_search(&self, layer: &Name, search: &Search)
            -> Result<Result<Found, UnknownCentre>, StoreError> = "geo.geo_search";
    }
}
