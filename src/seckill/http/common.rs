//! What the flash-sale routes share: the page query and cursor of the order listings, and the
//! 404 for an unknown voucher.

use serde::Deserialize;
use utoipa::IntoParams;

use crate::error::ApiError;
use crate::paging::Cursor;
use crate::seckill::logic::{Listed, Seq};
use crate::types::Name;

/// An order id's sequence is the cursor of the order listings (and of the dead-letter
/// listing, whose ids are minted alike); the largest id there can be is refused, since
/// nothing can follow it.
impl Cursor for Seq {
    fn parse_cursor(s: &str) -> Result<Self, String> {
        let seq: Seq = s.parse()?;
        seq.successor()
            .map(|_| seq)
            .ok_or_else(|| "out of range".to_owned())
    }
}

/// A voucher's place in the listing of vouchers (`<begin ms>~<id>`) is that listing's cursor.
impl Cursor for Listed {
    fn parse_cursor(s: &str) -> Result<Self, String> {
        s.parse()
    }
}

/// A page of a voucher's orders (or of its dead letters, whose ids are orders' ids).
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct PageQuery {
    /// The `next` of the previous page; absent or empty means from the first order.
    pub(crate) after: Option<String>,
    /// Page size, 1..=1000 (default 100).
    pub(crate) limit: Option<usize>,
}

/// The 404 of an unknown voucher.
pub fn not_found(voucher: &Name) -> ApiError {
    ApiError::NotFound(format!("no voucher {voucher}"))
}
