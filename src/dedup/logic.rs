//! Scalable Bloom filter arithmetic shared by the memory backend and the Redis Lua engine, so
//! both size layers and place bits identically.
//!
//! Sizing (per layer `i`, counted from 0), for a filter of `capacity` C and `error_rate` p:
//! - capacity `C·2^i` (expansion 2, as RedisBloom's default);
//! - error rate `p_i = p·(1 − r)·r^i` with tightening ratio `r` = [`TIGHTENING`], so the
//!   compound false-positive rate `Σ p_i = p·(1 − r)·Σ r^i` stays below p however far it grows;
//! - bits `m_i = ⌈C_i · (−ln p_i / ln² 2)⌉` and hash count `k_i = ⌈−log2 p_i⌉`.
//!
//! Hashing (stable across versions: a filter written today must answer the same later):
//! `SipHash-2-4` with 128-bit output as in the reference implementation (`siphash.c`,
//! `outlen = 16`), key bytes `00 01 … 0f`, over the item's UTF-8 bytes (no length prefix).
//! `h1` is the little-endian u64 of output bytes 0..8, `h2` of bytes 8..16. In a layer of `m`
//! bits the `k` positions are `a, a+b, a+2b, … (mod m)` with `a = h1 mod m` and
//! `b = h2 mod m`, or 1 when that is 0 (Kirsch–Mitzenmacher double hashing).

use siphasher::sip128::{Hasher128, SipHasher24};
use std::hash::Hasher;

/// Error-rate tightening ratio between consecutive layers.
///
/// 0.2, not RedisBloom's 0.5: the first layer gets `p·(1 − r)`, so at 1× capacity the filter
/// costs `−ln(p·(1 − r)) / ln² 2` bits per item. With 0.5 that is 1.15× the single-filter
/// optimum at p = 0.01; with 0.2 it is 1.05× (≤ 1.1× for any p ≤ 0.1), at the price of ~3.3
/// more bits per item in each later layer.
pub const TIGHTENING: f64 = 0.2;

/// Each new layer holds this many times the previous one's items.
pub const EXPANSION: u64 = 2;

/// Largest capacity a filter may be reserved with.
pub const MAX_CAPACITY: u64 = 1_000_000_000;

/// Smallest error rate accepted (k = 40 hashes in the first layer).
pub const MIN_ERROR_RATE: f64 = 1e-12;

/// Largest first layer: 2^29 bits (64 MiB).
pub const MAX_FIRST_LAYER_BITS: u64 = 1 << 29;

/// Largest total size of a filter's layers: 2^32 bits (512 MiB). This also keeps every bit
/// offset below 2^32, the most a Redis string holds, and exact in Lua's doubles.
pub const MAX_FILTER_BITS: u64 = 1 << 32;

/// The fixed SipHash key, bytes `00 01 … 0f` read as two little-endian u64s.
const SIP_KEY: (u64, u64) = (0x0706_0504_0302_0100, 0x0f0e_0d0c_0b0a_0908);

/// A filter's requested capacity and false-positive rate, validated.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Params {
    pub capacity: u64,
    pub error_rate: f64,
}

impl Params {
    /// Validates `capacity` and `error_rate` against the documented bounds.
    pub fn new(capacity: u64, error_rate: f64) -> Result<Self, String> {
        if !(error_rate > 0.0 && error_rate < 1.0) {
            return Err(format!(
                "error_rate must be greater than 0 and less than 1, got {error_rate}"
            ));
        }
        if error_rate < MIN_ERROR_RATE {
            return Err(format!(
                "error_rate must be at least {MIN_ERROR_RATE}, got {error_rate}"
            ));
        }
        if capacity == 0 || capacity > MAX_CAPACITY {
            return Err(format!(
                "capacity must be within 1..={MAX_CAPACITY}, got {capacity}"
            ));
        }
        let params = Self {
            capacity,
            error_rate,
        };
        let first = params.layer(0).bits;
        if first > MAX_FIRST_LAYER_BITS {
            return Err(format!(
                "a filter of capacity {capacity} at error_rate {error_rate} needs {} MiB; at most {} MiB",
                first.div_ceil(8 << 20),
                MAX_FIRST_LAYER_BITS / (8 << 20)
            ));
        }
        Ok(params)
    }

    /// The shape of layer `i`.
    pub fn layer(&self, i: u32) -> LayerSpec {
        let capacity = self.capacity.saturating_mul(EXPANSION.saturating_pow(i));
        let error_rate = self.error_rate * (1.0 - TIGHTENING) * TIGHTENING.powi(i as i32);
        let ln2 = std::f64::consts::LN_2;
        let bits_per_item = -error_rate.ln() / (ln2 * ln2);
        LayerSpec {
            capacity,
            bits: ((capacity as f64) * bits_per_item).ceil().max(1.0) as u64,
            hashes: (-error_rate.log2()).ceil().max(1.0) as u32,
        }
    }

    /// Every layer the filter may ever have: as many as fit in [`MAX_FILTER_BITS`].
    pub fn layout(&self) -> Vec<LayerSpec> {
        let mut total = 0u64;
        let mut layers = Vec::new();
        for i in 0.. {
            let layer = self.layer(i);
            total = total.saturating_add(layer.bits);
            if total > MAX_FILTER_BITS {
                break;
            }
            layers.push(layer);
        }
        layers
    }

    /// The error rate as stored and compared: Rust's shortest round-trip form.
    pub fn error_rate_text(&self) -> String {
        self.error_rate.to_string()
    }
}

/// One layer's capacity, size and number of hash functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LayerSpec {
    pub capacity: u64,
    pub bits: u64,
    pub hashes: u32,
}

impl LayerSpec {
    /// Bytes the layer's bitmap takes.
    pub fn bytes(&self) -> u64 {
        self.bits.div_ceil(8)
    }
}

/// An item's two 64-bit hashes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ItemHash {
    pub h1: u64,
    pub h2: u64,
}

impl ItemHash {
    pub fn of(item: &str) -> Self {
        let mut hasher = SipHasher24::new_with_keys(SIP_KEY.0, SIP_KEY.1);
        hasher.write(item.as_bytes());
        let out = hasher.finish128();
        Self {
            h1: out.h1,
            h2: out.h2,
        }
    }

    /// The bit positions of this item in a layer of `bits` bits with `hashes` hash functions.
    pub fn positions(self, layer: LayerSpec) -> impl Iterator<Item = u64> {
        let m = layer.bits;
        let a = self.h1 % m;
        let b = match self.h2 % m {
            0 => 1 % m,
            b => b,
        };
        (0..u64::from(layer.hashes)).scan(a, move |pos, _| {
            let here = *pos;
            // pos + b < 2m ≤ 2^33: no overflow, and exactly what the Lua engine computes.
            *pos = (*pos + b) % m;
            Some(here)
        })
    }
}

/// A batch's items, each at most once, in first-seen order: `(item, index of first occurrence)`.
pub fn first_occurrences(items: &[String]) -> Vec<usize> {
    let mut seen = std::collections::HashSet::with_capacity(items.len());
    items
        .iter()
        .enumerate()
        .filter(|(_, item)| seen.insert(item.as_str()))
        .map(|(i, _)| i)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ideal_bits_per_item(p: f64) -> f64 {
        -p.ln() / (std::f64::consts::LN_2 * std::f64::consts::LN_2)
    }

    #[test]
    fn siphash_matches_the_reference_vector() {
        // vectors_sip128[0] of the reference implementation: empty input, key 00..0f.
        let h = ItemHash::of("");
        let mut bytes = [0u8; 16];
        bytes[..8].copy_from_slice(&h.h1.to_le_bytes());
        bytes[8..].copy_from_slice(&h.h2.to_le_bytes());
        assert_eq!(
            bytes,
            [163, 129, 127, 4, 186, 37, 168, 230, 109, 246, 114, 20, 199, 85, 2, 147]
        );
        // Pinned so an accidental change of hash, key or byte order fails loudly.
        assert_eq!(ItemHash::of("news:1"), ItemHash::of("news:1"));
        assert_ne!(ItemHash::of("news:1"), ItemHash::of("news:2"));
    }

    #[test]
    fn layers_double_and_tighten() {
        let p = Params::new(1000, 0.01).unwrap();
        let l0 = p.layer(0);
        assert_eq!(l0.capacity, 1000);
        assert_eq!(l0.hashes, 7); // ⌈−log2 0.008⌉
        assert_eq!(l0.bits, 10_050); // ⌈1000 · −ln 0.008 / ln² 2⌉
        let l1 = p.layer(1);
        assert_eq!(l1.capacity, 2000);
        assert_eq!(l1.hashes, 10); // ⌈−log2 0.0016⌉
        let compound: f64 = (0..40)
            .map(|i| 0.01 * (1.0 - TIGHTENING) * TIGHTENING.powi(i))
            .sum();
        assert!(compound <= 0.01 * (1.0 + 1e-12), "{compound}");
        let layout = p.layout();
        assert!(layout.len() > 15, "{}", layout.len());
        assert!(layout.iter().map(|l| l.bits).sum::<u64>() <= MAX_FILTER_BITS);
    }

    #[test]
    fn bits_per_item_at_capacity_is_near_the_optimum() {
        for p in [0.1, 0.01, 0.001, 1e-6] {
            let params = Params::new(100_000, p).unwrap();
            let measured = params.layer(0).bits as f64 / 100_000.0;
            let ratio = measured / ideal_bits_per_item(p);
            println!(
                "p = {p}: {measured:.3} bits/item, optimum {:.3}, ratio {ratio:.4}",
                ideal_bits_per_item(p)
            );
            assert!(ratio <= 1.1, "p = {p}: ratio {ratio}");
        }
    }

    #[test]
    fn bounds_are_enforced() {
        for (c, p) in [
            (0, 0.01),
            (1000, 0.0),
            (1000, 1.0),
            (1000, -0.5),
            (1000, f64::NAN),
            (1000, f64::INFINITY),
            (1000, 1e-13),
            (MAX_CAPACITY + 1, 0.5),
            (100_000_000, 0.01),
        ] {
            assert!(Params::new(c, p).is_err(), "{c} {p}");
        }
        assert!(Params::new(1, 0.999).is_ok());
        assert!(Params::new(10_000_000, 0.01).is_ok());
    }

    #[test]
    fn positions_stay_in_range_and_never_repeat_b_zero() {
        let layer = LayerSpec {
            capacity: 1,
            bits: 7,
            hashes: 5,
        };
        for i in 0..1000 {
            let h = ItemHash::of(&i.to_string());
            let pos: Vec<u64> = h.positions(layer).collect();
            assert_eq!(pos.len(), 5);
            assert!(pos.iter().all(|p| *p < 7));
            assert!(pos[0] != pos[1], "b is never 0");
        }
        let one = LayerSpec {
            capacity: 1,
            bits: 1,
            hashes: 3,
        };
        assert!(ItemHash::of("x").positions(one).all(|p| p == 0));
    }

    #[test]
    fn batches_keep_first_occurrences() {
        let items: Vec<String> = ["a", "b", "a", "c", "b"].map(str::to_owned).to_vec();
        assert_eq!(first_occurrences(&items), vec![0, 1, 3]);
    }
}
