//! A HyperLogLog that counts exactly as Redis's `PFADD`/`PFCOUNT`/`PFMERGE` do, for the
//! in-memory backend: 2^14 six-bit registers (standard error 1.04/√16384 ≈ 0.81%), elements
//! hashed with MurmurHash64A (seed `0xadc83b19`), the low 14 bits picking the register and the
//! run of zeros above them giving its value, and the cardinality from Ertl's estimator (what
//! Redis uses since 5.0). Same registers, same estimator: for the same visitors the memory
//! backend answers what Redis answers, which the unit tests pin against values read from Redis.
//!
//! Hand-rolled because the HyperLogLog crates use their own hashes, register splits and
//! estimators (HLL++ bias tables), so their answers would drift from Redis's; this is ~150 lines.
//! Small counters keep only their non-zero registers (as Redis's sparse encoding does), so an
//! idle page-day costs bytes, not 16 KiB; it never stores the elements themselves.

use std::collections::BTreeMap;

/// Register-index bits (Redis's `HLL_P`).
const P: u32 = 14;
/// Number of registers.
pub const REGISTERS: usize = 1 << P;
/// Bits left for the zero run (Redis's `HLL_Q`).
const Q: u32 = 64 - P;
/// `0.5 / ln 2`, the estimator's constant for an infinite number of registers.
const ALPHA_INF: f64 = 0.721_347_520_444_481_7;
/// Redis's seed for hashing HyperLogLog elements.
const SEED: u64 = 0xadc8_3b19;
/// Past this many non-zero registers the sparse map costs more than the dense array.
const SPARSE_MAX: usize = 1024;

/// One HyperLogLog counter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hll {
    registers: Registers,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Registers {
    /// Non-zero registers only (index → value).
    Sparse(BTreeMap<u16, u8>),
    /// All registers, one byte each (values never exceed `Q + 1` = 51).
    Dense(Box<[u8; REGISTERS]>),
}

impl Default for Hll {
    fn default() -> Self {
        Self::new()
    }
}

impl Hll {
    pub fn new() -> Self {
        Self {
            registers: Registers::Sparse(BTreeMap::new()),
        }
    }

    /// A counter from its registers, one byte each (values above `Q + 1` are clamped), as a
    /// backend decoded them from its own storage format.
    pub fn from_registers(mut regs: Box<[u8; REGISTERS]>) -> Self {
        for r in regs.iter_mut() {
            *r = (*r).min(Q as u8 + 1);
        }
        Self {
            registers: Registers::Dense(regs),
        }
    }

    /// Its registers, one byte each.
    pub fn registers(&self) -> Box<[u8; REGISTERS]> {
        match &self.registers {
            Registers::Dense(regs) => regs.clone(),
            Registers::Sparse(map) => {
                let mut regs = Box::new([0u8; REGISTERS]);
                for (&i, &v) in map {
                    regs[usize::from(i)] = v;
                }
                regs
            }
        }
    }

    /// Adds one element; true when a register changed (what `PFADD` reports as 1).
    pub fn add(&mut self, element: &[u8]) -> bool {
        let (index, value) = register_of(element);
        self.raise(index, value)
    }

    /// Folds `other` in (register-wise maximum, as `PFMERGE`).
    pub fn merge(&mut self, other: &Hll) {
        match &other.registers {
            Registers::Sparse(map) => {
                for (&i, &v) in map {
                    self.raise(i, v);
                }
            }
            Registers::Dense(regs) => {
                let mine = self.dense_mut();
                for (m, o) in mine.iter_mut().zip(regs.iter()) {
                    *m = (*m).max(*o);
                }
            }
        }
    }

    /// The estimated number of distinct elements added (what `PFCOUNT` answers).
    pub fn count(&self) -> u64 {
        let mut histogram = [0u32; 64];
        match &self.registers {
            Registers::Sparse(map) => {
                histogram[0] = (REGISTERS - map.len()) as u32;
                for &v in map.values() {
                    histogram[usize::from(v)] += 1;
                }
            }
            Registers::Dense(regs) => {
                for &v in regs.iter() {
                    histogram[usize::from(v)] += 1;
                }
            }
        }
        estimate(&histogram)
    }

    fn raise(&mut self, index: u16, value: u8) -> bool {
        if let Registers::Sparse(map) = &mut self.registers {
            let slot = map.entry(index).or_insert(0);
            if *slot >= value {
                return false;
            }
            *slot = value;
            if map.len() <= SPARSE_MAX {
                return true;
            }
            self.dense_mut();
            return true;
        }
        let regs = self.dense_mut();
        let slot = &mut regs[usize::from(index)];
        if *slot >= value {
            return false;
        }
        *slot = value;
        true
    }

    fn dense_mut(&mut self) -> &mut [u8; REGISTERS] {
        if let Registers::Sparse(map) = &self.registers {
            let mut regs = Box::new([0u8; REGISTERS]);
            for (&i, &v) in map {
                regs[usize::from(i)] = v;
            }
            self.registers = Registers::Dense(regs);
        }
        match &mut self.registers {
            Registers::Dense(regs) => regs,
            Registers::Sparse(_) => unreachable!("converted just above"),
        }
    }
}

/// Redis's `hllPatLen`: the register an element lands in and the value it offers there
/// (the position of the lowest set bit above the index bits, counting from 1).
fn register_of(element: &[u8]) -> (u16, u8) {
    let hash = murmur_hash64a(element, SEED);
    let index = (hash & (REGISTERS as u64 - 1)) as u16;
    // The sentinel bit bounds the run at Q + 1 even for an all-zero remainder.
    let rest = (hash >> P) | (1 << Q);
    (index, rest.trailing_zeros() as u8 + 1)
}

/// MurmurHash64A exactly as Redis's `hyperloglog.c` has it (little-endian words).
fn murmur_hash64a(data: &[u8], seed: u64) -> u64 {
    const M: u64 = 0xc6a4_a793_5bd1_e995;
    const R: u32 = 47;
    let mut h = seed ^ (data.len() as u64).wrapping_mul(M);
    let mut words = data.chunks_exact(8);
    for word in &mut words {
        let mut k = u64::from_le_bytes(word.try_into().expect("chunks of 8"));
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h ^= k;
        h = h.wrapping_mul(M);
    }
    let tail = words.remainder();
    if !tail.is_empty() {
        for (i, &b) in tail.iter().enumerate() {
            h ^= u64::from(b) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h
}

/// Ertl's improved raw estimator ("New cardinality estimation algorithms for HyperLogLog
/// sketches", 2017), as Redis's `hllCount` computes it from the register histogram.
fn estimate(histogram: &[u32; 64]) -> u64 {
    let m = REGISTERS as f64;
    let q = Q as usize;
    let mut z = m * tau((m - f64::from(histogram[q + 1])) / m);
    for j in (1..=q).rev() {
        z += f64::from(histogram[j]);
        z *= 0.5;
    }
    z += m * sigma(f64::from(histogram[0]) / m);
    (ALPHA_INF * m * m / z).round() as u64
}

fn sigma(mut x: f64) -> f64 {
    if x == 1.0 {
        return f64::INFINITY;
    }
    let (mut y, mut z) = (1.0, x);
    loop {
        x *= x;
        let before = z;
        z += x * y;
        y += y;
        if z == before {
            return z;
        }
    }
}

fn tau(mut x: f64) -> f64 {
    if x == 0.0 || x == 1.0 {
        return 0.0;
    }
    let (mut y, mut z) = (1.0, 1.0 - x);
    loop {
        x = x.sqrt();
        let before = z;
        y *= 0.5;
        z -= (1.0 - x).powi(2) * y;
        if z == before {
            return z / 3.0;
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A sketch of `n` distinct members, `<prefix>0` up: the Redis encoding's tests use it too.
    pub(crate) fn filled(prefix: &str, n: u32) -> Hll {
        let mut h = Hll::new();
        for i in 0..n {
            h.add(format!("{prefix}{i}").as_bytes());
        }
        h
    }

    /// Within `sigmas` standard errors (0.81%) of `truth`.
    fn assert_close(estimate: u64, truth: u64, sigmas: f64) {
        let err = (estimate as f64 - truth as f64).abs() / truth as f64;
        assert!(
            err <= sigmas * 0.0081,
            "estimate {estimate} vs {truth}: error {:.3}%",
            err * 100.0
        );
    }

    #[test]
    fn empty_and_tiny_counts_are_exact() {
        assert_eq!(Hll::new().count(), 0);
        let mut h = Hll::new();
        assert!(h.add(b"alice"));
        assert!(!h.add(b"alice"), "a repeat changes nothing");
        assert!(h.add(b"bob"));
        assert_eq!(h.count(), 2);
    }

    /// Values Redis 7.0 answers for the same elements (`PFADD k v0 v1 …` then `PFCOUNT k`),
    /// so the registers, hash and estimator all match Redis, not just the error bound.
    #[test]
    fn counts_equal_redis() {
        assert_eq!(filled("v", 1_000).count(), REDIS_1K);
        assert_eq!(filled("v", 10_000).count(), REDIS_10K);
        assert_eq!(filled("v", 100_000).count(), REDIS_100K);
    }

    const REDIS_1K: u64 = 1_006;
    const REDIS_10K: u64 = 9_948;
    const REDIS_100K: u64 = 100_372;

    #[test]
    fn error_within_bounds() {
        // Three standard errors: a fixed input, so this never flakes, and it would catch a
        // broken hash or estimator, which is off by far more.
        for (prefix, n) in [("a", 10_000), ("b", 100_000), ("c", 1_000_000)] {
            assert_close(filled(prefix, n).count(), u64::from(n), 3.0);
        }
    }

    #[test]
    fn merge_is_the_union() {
        let mut a = filled("x", 60_000);
        let b = {
            let mut b = Hll::new();
            for i in 40_000..100_000 {
                b.add(format!("x{i}").as_bytes());
            }
            b
        };
        a.merge(&b);
        assert_close(a.count(), 100_000, 3.0);
        assert_eq!(a, {
            let mut all = filled("x", 100_000);
            all.merge(&Hll::new());
            all
        });
        // Sparse into dense and dense into sparse agree.
        let mut small = filled("y", 10);
        small.merge(&a);
        let mut big = a.clone();
        big.merge(&filled("y", 10));
        assert_eq!(small.count(), big.count());
    }

    #[test]
    fn sparse_and_dense_count_alike() {
        let sparse = filled("s", 500);
        assert!(matches!(sparse.registers, Registers::Sparse(_)));
        let mut dense = sparse.clone();
        dense.dense_mut();
        assert_eq!(sparse.count(), dense.count());
        assert!(matches!(filled("s", 5_000).registers, Registers::Dense(_)));
    }

    #[test]
    fn murmur_matches_reference_tails() {
        // Every tail length goes through its own branch; all must differ and be stable.
        let hashes: Vec<u64> = (0..=16)
            .map(|n| murmur_hash64a(&b"0123456789abcdef"[..n], SEED))
            .collect();
        let mut unique = hashes.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), hashes.len());
    }
}
