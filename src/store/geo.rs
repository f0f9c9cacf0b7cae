//! Geo store calls, dispatched to the active backend.

use super::{Store, StoreError};
use crate::geo::{Found, GeoStore, Place, Point, Search, Unit};
use crate::types::Name;

impl GeoStore for Store {
    async fn geo_put(&self, layer: &Name, member: &Name, at: Point) -> Result<bool, StoreError> {
        dispatch!(self, "geo.geo_put", s => s.geo_put(layer, member, at).await)
    }
    async fn geo_put_many(&self, layer: &Name, places: &[Place]) -> Result<u64, StoreError> {
        dispatch!(self, "geo.geo_put_many", s => s.geo_put_many(layer, places).await)
    }
    async fn geo_get(&self, layer: &Name, member: &Name) -> Result<Option<u64>, StoreError> {
        dispatch!(self, "geo.geo_get", s => s.geo_get(layer, member).await)
    }
    async fn geo_remove(&self, layer: &Name, member: &Name) -> Result<bool, StoreError> {
        dispatch!(self, "geo.geo_remove", s => s.geo_remove(layer, member).await)
    }
    async fn geo_distance(
        &self,
        layer: &Name,
        from: &Name,
        to: &Name,
        unit: Unit,
    ) -> Result<Option<f64>, StoreError> {
        dispatch!(self, "geo.geo_distance", s => s.geo_distance(layer, from, to, unit).await)
    }
    async fn geo_search(&self, layer: &Name, search: &Search) -> Result<Option<Found>, StoreError> {
        dispatch!(self, "geo.geo_search", s => s.geo_search(layer, search).await)
    }
}
