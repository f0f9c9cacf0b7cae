//! Paged listings (docs/api.md "Paging"): the `after` cursor and the `limit` of a request, the
//! one extra item asked of the store, and the `next` cursor of the reply. Every paged listing
//! goes through [`Page`], so the bounds and the cursor rules are written once; each listing
//! says only what its cursor is ([`Cursor`]).

use crate::error::ApiError;
use crate::types::Listing;

/// A page's size when the request names none.
pub const DEFAULT_LIMIT: usize = 100;
/// The largest page.
pub const MAX_LIMIT: usize = 1000;

/// Where a listing goes on from: read from `after`, written as `next` (its `Display`).
pub trait Cursor: Sized + std::fmt::Display {
    /// Reads a cursor; the error says what is wrong with it (after `after: `). A type whose
    /// store must step past the cursor refuses here one that nothing can follow.
    fn parse_cursor(s: &str) -> Result<Self, String>;
}

/// A plain counter (a listing ordered by a store-minted number).
impl Cursor for u64 {
    fn parse_cursor(s: &str) -> Result<Self, String> {
        s.parse().map_err(|_| format!("not a cursor: {s:?}"))
    }
}

/// One request's page: where it starts and how many it holds, both checked.
#[derive(Debug, Clone, Copy)]
pub struct Page<C> {
    /// After this item; `None` from the first.
    pub after: Option<C>,
    pub limit: usize,
}

impl<C: Cursor> Page<C> {
    /// The page a query's `after` and `limit` ask for: `limit` 1..=[`MAX_LIMIT`] (default
    /// [`DEFAULT_LIMIT`]); an absent or empty `after` starts from the first item.
    pub fn parse(after: Option<&str>, limit: Option<usize>) -> Result<Self, ApiError> {
        let limit = limit.unwrap_or(DEFAULT_LIMIT);
        if !(1..=MAX_LIMIT).contains(&limit) {
            return Err(ApiError::invalid(format!(
                "limit must be within 1..={MAX_LIMIT}, got {limit}"
            )));
        }
        let after = after
            .filter(|a| !a.is_empty())
            .map(C::parse_cursor)
            .transpose()
            .map_err(|e| ApiError::invalid(format!("after: {e}")))?;
        Ok(Self { after, limit })
    }

    /// How many to ask the store for: one more than the page holds tells whether another page
    /// exists, without a second call.
    pub fn fetch(&self) -> usize {
        self.limit + 1
    }

    /// Cuts `items` (read with [`Self::fetch`]) to the page and returns the `next` cursor: the
    /// last item's, when more were read than the page holds or when `more` says the store
    /// stopped early (a page ended at a byte budget may go on), else `None` (the last page).
    pub fn next<T>(
        &self,
        items: &mut Vec<T>,
        more: bool,
        cursor: impl Fn(&T) -> C,
    ) -> Option<String> {
        let more = more || items.len() > self.limit;
        items.truncate(self.limit);
        more.then(|| items.last().map(|item| cursor(item).to_string()))
            .flatten()
    }

    /// The page's items of a store's [`Listing`] (read with [`Self::fetch`]) and its `next`
    /// cursor: where the store stopped examining, when it stopped before it found a page.
    pub fn of<T>(&self, listing: Listing<C, T>) -> (Vec<(C, T)>, Option<String>)
    where
        C: Clone,
    {
        let mut items = listing.items;
        let next = match listing.stopped_at {
            Some(at) if items.len() <= self.limit => Some(at.to_string()),
            _ => self.next(&mut items, false, |(at, _)| at.clone()),
        };
        (items, next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_and_cursors_are_checked() {
        let page = Page::<u64>::parse(None, None).unwrap();
        assert_eq!((page.after, page.limit, page.fetch()), (None, 100, 101));
        let page = Page::<u64>::parse(Some(""), Some(1000)).unwrap();
        assert_eq!((page.after, page.limit), (None, 1000));
        assert_eq!(
            Page::<u64>::parse(Some("7"), Some(1)).unwrap().after,
            Some(7)
        );
        for (after, limit) in [(None, Some(0)), (None, Some(1001)), (Some("x"), None)] {
            assert!(
                Page::<u64>::parse(after, limit).is_err(),
                "{after:?} {limit:?}"
            );
        }
    }

    #[test]
    fn next_is_the_last_items_cursor_while_more_follow() {
        let page = Page::<u64>::parse(None, Some(2)).unwrap();
        let mut items = vec![1, 2, 3];
        assert_eq!(page.next(&mut items, false, |i| *i), Some("2".to_owned()));
        assert_eq!(items, [1, 2]);
        let mut items = vec![1, 2];
        assert_eq!(page.next(&mut items, false, |i| *i), None);
        assert_eq!(page.next(&mut items, true, |i| *i), Some("2".to_owned()));
        assert_eq!(page.next(&mut Vec::new(), true, |i: &u64| *i), None);
    }
}
