//! The rules of a nearby search: which parameters go together, their bounds and defaults, and
//! how many results to ask the store for when the centre member itself is left out.

use serde::Deserialize;
use utoipa::ToSchema;

use super::{writable_member, Center, Hit, Order, Point, Search, Shape, Unit};
use crate::types::{Name, Refused};

/// Largest `count` of a search.
pub const MAX_COUNT: u32 = 1000;

/// Default number of search results.
pub const DEFAULT_COUNT: u32 = 20;

/// Largest radius, width or height in metres (40,000 km, about the Earth's circumference:
/// anything larger already covers the globe).
pub const MAX_EXTENT_M: f64 = 40_000_000.0;

/// The shape of a search area.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ShapeKind {
    #[default]
    Circle,
    Box,
}

/// A nearby search as the caller wrote it, before any rule is checked.
#[derive(Debug, Clone, Default)]
pub struct Request {
    pub lon: Option<f64>,
    pub lat: Option<f64>,
    pub member: Option<Name>,
    pub radius: Option<f64>,
    pub shape: Option<ShapeKind>,
    pub width: Option<f64>,
    pub height: Option<f64>,
    pub unit: Option<Unit>,
    pub count: Option<u32>,
    pub order: Option<Order>,
    pub include_self: Option<bool>,
}

/// A checked search and what to do with its hits.
#[derive(Debug, Clone)]
pub struct Plan {
    pub search: Search,
    /// A search around a member leaves the member itself out unless asked to include it.
    pub drop_self: bool,
}

impl Request {
    /// Checks the rules and turns the request into a search.
    pub fn plan(self) -> Result<Plan, Refused> {
        let unit = self.unit.unwrap_or_default();
        let count = self.count.unwrap_or(DEFAULT_COUNT);
        if !(1..=MAX_COUNT).contains(&count) {
            return Err(Refused::invalid(format!(
                "count must be within 1..={MAX_COUNT}, got {count}"
            )));
        }
        let center = match (self.lon, self.lat, self.member) {
            (Some(lon), Some(lat), None) => Center::Point(Point::new(lon, lat)?),
            (None, None, Some(member)) => {
                // A reserved name is a 400 wherever a member is named, not a 404.
                writable_member(&member)?;
                Center::Member(member)
            }
            (None, None, None) => {
                return Err(Refused::invalid("give lon and lat, or member"));
            }
            (_, _, Some(_)) => {
                return Err(Refused::invalid(
                    "give either lon and lat, or member, not both",
                ));
            }
            _ => return Err(Refused::invalid("lon and lat go together")),
        };
        if self.include_self.is_some() && matches!(center, Center::Point(_)) {
            return Err(Refused::invalid(
                "include_self applies to a search around a member",
            ));
        }
        let extent = |name: &str, v: f64| {
            if v.is_finite() && v > 0.0 && v * unit.meters() <= MAX_EXTENT_M {
                Ok(v)
            } else {
                Err(Refused::invalid(format!(
                    "{name} must be positive and at most 40000 km, got {v} {}",
                    unit.as_str()
                )))
            }
        };
        let shape = match (self.shape.unwrap_or_default(), self.radius) {
            (ShapeKind::Circle, Some(r)) if self.width.is_none() && self.height.is_none() => {
                Shape::Radius(extent("radius", r)?)
            }
            (ShapeKind::Circle, None) if self.width.is_some() || self.height.is_some() => {
                return Err(Refused::invalid("width and height need shape=box"));
            }
            (ShapeKind::Circle, None) => {
                return Err(Refused::invalid(
                    "give radius, or shape=box with width and height",
                ));
            }
            (ShapeKind::Box, None) => match (self.width, self.height) {
                (Some(w), Some(h)) => Shape::Box {
                    width: extent("width", w)?,
                    height: extent("height", h)?,
                },
                _ => return Err(Refused::invalid("shape=box needs width and height")),
            },
            _ => {
                return Err(Refused::invalid(
                    "give either radius, or shape=box with width and height",
                ))
            }
        };
        let drop_self = matches!(center, Center::Member(_)) && self.include_self != Some(true);
        Ok(Plan {
            search: Search {
                center,
                shape,
                unit,
                order: self.order.unwrap_or_default(),
                // One more, so there are still `count` after dropping the member itself.
                count: count + u32::from(drop_self),
            },
            drop_self,
        })
    }
}

impl Plan {
    /// The hits to show: without the centre member when it is dropped, and at most the count
    /// asked for (the store was asked for one more).
    pub fn results(&self, mut hits: Vec<Hit>) -> Vec<Hit> {
        if self.drop_self {
            if let Center::Member(me) = &self.search.center {
                hits.retain(|h| h.member != me.as_str());
            }
            hits.truncate(self.search.count as usize - 1);
        }
        hits
    }
}
