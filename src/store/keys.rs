//! How keys are spelled: `<prefix><kind>:{<tag>}:<rest>`. [`Keys`] holds the prefix; each
//! domain spells its own keys in an `impl Keys` block of its Redis backend.
//!
//! The `{tag}` is the Redis Cluster hash tag: every key one script or multi-key command touches
//! shares it, so they land in one slot (docs/design.md "Redis rules").

/// A day's `YYYY-MM-DD` digits as a `str` for [`Keys::join`].
pub(crate) fn day_str(text: &[u8; 10]) -> &str {
    std::str::from_utf8(text).unwrap_or_default()
}

/// Builds every key under one configured prefix.
#[derive(Debug, Clone)]
pub struct Keys {
    /// Shared, not owned: the store (and these with it) is cloned into every request.
    pub(crate) prefix: std::sync::Arc<str>,
}

impl Keys {
    pub fn new(prefix: &str) -> Self {
        Self {
            prefix: prefix.into(),
        }
    }

    /// The prefix and `parts`, in one allocation of the exact size. The keys a cheap request
    /// names are built this way rather than with `format!`, which cost about 1,000 instructions
    /// a key (three keys were 4% of a check-in in callgrind).
    pub(crate) fn join(&self, parts: &[&str]) -> String {
        let len = self.prefix.len() + parts.iter().map(|p| p.len()).sum::<usize>();
        let mut key = String::with_capacity(len);
        key.push_str(&self.prefix);
        for part in parts {
            key.push_str(part);
        }
        key
    }

    /// A glob of keys or channels (`SCAN … MATCH`, `PSUBSCRIBE`): the prefix with its glob
    /// characters escaped, so it matches itself only, then `rest`, a glob.
    pub(crate) fn pattern(&self, rest: &str) -> String {
        let mut pattern = String::with_capacity(self.prefix.len() + rest.len() + 2);
        for c in self.prefix.chars() {
            if matches!(c, '*' | '?' | '[' | ']' | '\\') {
                pattern.push('\\');
            }
            pattern.push(c);
        }
        pattern.push_str(rest);
        pattern
    }

    /// `key` without the prefix: `None` for a key this store's prefix does not begin.
    pub(crate) fn unprefixed<'k>(&self, key: &'k str) -> Option<&'k str> {
        key.strip_prefix(&*self.prefix)
    }
}

/// The hash tag Redis Cluster hashes for `key` (the whole key when it has none).
pub fn hash_tag(key: &str) -> &str {
    if let Some(open) = key.find('{') {
        if let Some(len) = key[open + 1..].find('}') {
            if len > 0 {
                return &key[open + 1..open + 1 + len];
            }
        }
    }
    key
}

/// For the domains' key tests: `keys` start with `first` and all fall under the hash tag
/// `tag`, as the keys one script touches must.
#[cfg(test)]
pub(crate) fn assert_one_slot(tag: &str, first: &str, keys: &[String]) {
    assert_eq!(keys[0], first);
    for key in keys {
        assert_eq!(hash_tag(key), tag, "{key}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tag_is_the_first_braced_text() {
        assert_eq!(hash_tag("gw:sk:{v1}:orders"), "v1");
        assert_eq!(hash_tag("gw:{}:x"), "gw:{}:x");
        assert_eq!(hash_tag("plain"), "plain");
        assert_eq!(Keys::new("gw:").join(&["a:{", "b", "}"]), "gw:a:{b}");
        assert_eq!(Keys::new("a*[b]:").pattern("q:*"), "a\\*\\[b\\]:q:*");
    }
}
