//! Geo layers on Redis geo sets: GEOADD, ZSCORE, ZREM, GEODIST, and searches through
//! `geo_nearby.lua` (GEOSEARCH, made cheap on dense layers for nearest-first searches; see the
//! script).

use std::sync::LazyLock;

use fred::prelude::*;
use fred::types::geo::GeoUnit;
use fred::types::scripts::Script;

use super::{map_err, RedisStore};
use crate::geo::logic;
use crate::geo::{
    Center, Found, GeoStore, Hit, LayerBound, LayerFull, Order, Place, Point, Search, Shape, Unit,
    UnknownCentre,
};
use crate::store::error::StoreError;
use crate::types::Name;

static PUT: LazyLock<Script> = LazyLock::new(|| Script::from_lua(include_str!("geo_put.lua")));
static NEARBY: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("geo_nearby.lua")));

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
        let mut args: Vec<String> = Vec::with_capacity(2 + 3 * places.len());
        args.push(bound.max_places.to_string());
        args.push(bound.expire_at.to_string());
        for p in places {
            // Rust prints the shortest text that parses back to the same double.
            args.push(p.at.lon.to_string());
            args.push(p.at.lat.to_string());
            args.push(p.member.as_str().to_owned());
        }
        let added: i64 = PUT
            .evalsha_with_reload(self.pool.next(), self.keys.geo(layer), args)
            .await
            .map_err(map_err)?;
        Ok(u64::try_from(added).map_err(|_| LayerFull))
    }

    async fn geo_get(&self, layer: &Name, member: &Name) -> Result<Option<u64>, StoreError> {
        let score: Value = self
            .pool
            .zscore(self.keys.geo(layer), member.as_str())
            .await
            .map_err(map_err)?;
        Ok(score_of(&score))
    }

    async fn geo_remove(&self, layer: &Name, member: &Name) -> Result<bool, StoreError> {
        let removed: i64 = self
            .pool
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
        ];
        let reply: Vec<Value> = NEARBY
            .evalsha_with_reload(self.pool.next(), vec![self.keys.geo(layer)], args)
            .await
            .map_err(map_err)?;
        let mut reply = reply.into_iter();
        if reply.next().and_then(|v| v.as_i64()) != Some(1) {
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
