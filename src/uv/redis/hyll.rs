//! Redis's HyperLogLog string format (`hyperloglog.c`), read and written in the gateway so
//! unions and merges over many keys run here, not inside one long PFCOUNT/PFMERGE: a 16-byte
//! header (`HYLL`, encoding, 3 unused bytes, the cached cardinality whose top bit marks it
//! stale), then either 16,384 dense 6-bit registers packed low bit first, or the sparse
//! opcodes ZERO (`00xxxxxx`: 1–64 zero registers), XZERO (`01xxxxxx yyyyyyyy`: 1–16,384 zero
//! registers) and VAL (`1vvvvvxx`: 1–4 registers of value 1–32). Counting what is decoded
//! with [`Hll::count`] gives what PFCOUNT gives for the same keys (`tests/redis_time.rs` and
//! the unit tests below check it against a real server).

use crate::uv::hll::{Hll, REGISTERS};

const HEADER: usize = 16;
const DENSE_BYTES: usize = REGISTERS * 6 / 8;
const DENSE: u8 = 0;
const SPARSE: u8 = 1;

/// The registers of a HyperLogLog string, or `None` when it is not one Redis would accept.
pub(super) fn decode(s: &[u8]) -> Option<Hll> {
    if s.len() < HEADER || &s[..4] != b"HYLL" {
        return None;
    }
    let body = &s[HEADER..];
    let mut regs = Box::new([0u8; REGISTERS]);
    match s[4] {
        DENSE if body.len() == DENSE_BYTES => {
            for (i, r) in regs.iter_mut().enumerate() {
                let bit = i * 6;
                let (byte, shift) = (bit / 8, bit % 8);
                let lo = u16::from(body[byte]);
                let hi = u16::from(body.get(byte + 1).copied().unwrap_or(0));
                *r = (((lo | (hi << 8)) >> shift) & 63) as u8;
            }
        }
        SPARSE => {
            let mut at = 0usize;
            let mut ops = body.iter();
            while let Some(&op) = ops.next() {
                let (len, value) = match op >> 6 {
                    0 => (usize::from(op & 0x3f) + 1, 0),
                    1 => {
                        let low = *ops.next()?;
                        ((usize::from(op & 0x3f) << 8 | usize::from(low)) + 1, 0)
                    }
                    _ => (usize::from(op & 3) + 1, ((op >> 2) & 0x1f) + 1),
                };
                let run = regs.get_mut(at..at + len)?;
                run.fill(value);
                at += len;
            }
            if at != REGISTERS {
                return None;
            }
        }
        _ => return None,
    }
    Some(Hll::from_registers(regs))
}

/// The HyperLogLog string of `hll`, its cached cardinality marked stale so Redis recounts it
/// when asked: sparse while every register fits a VAL opcode (≤ 32), as Redis keeps small
/// counters, so merging small pages does not make their targets 12 KiB dense strings; else
/// dense. (Redis itself turns a sparse target dense once it outgrows `hll-sparse-max-bytes`.)
pub(super) fn encode(hll: &Hll) -> Vec<u8> {
    let regs = hll.registers();
    if regs.iter().any(|&v| v > 32) {
        return encode_dense(&regs);
    }
    let mut out = header(SPARSE);
    let mut i = 0;
    while i < REGISTERS {
        let v = regs[i];
        let run = regs[i..].iter().take_while(|&&r| r == v).count();
        let mut left = run;
        while left > 0 {
            if v != 0 {
                let n = left.min(4);
                out.push(0x80 | ((v - 1) << 2) | (n as u8 - 1));
                left -= n;
            } else if left > 64 {
                let n = left.min(REGISTERS) - 1;
                out.push(0x40 | (n >> 8) as u8);
                out.push((n & 0xff) as u8);
                left -= n + 1;
            } else {
                out.push(left as u8 - 1);
                left = 0;
            }
        }
        i += run;
    }
    out
}

fn header(encoding: u8) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER + DENSE_BYTES + 1);
    out.extend_from_slice(b"HYLL");
    out.extend_from_slice(&[encoding, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x80]);
    out
}

fn encode_dense(regs: &[u8; REGISTERS]) -> Vec<u8> {
    let mut out = header(DENSE);
    out.resize(HEADER + DENSE_BYTES + 1, 0);
    let body = &mut out[HEADER..];
    for (i, &v) in regs.iter().enumerate() {
        let bit = i * 6;
        let (byte, shift) = (bit / 8, bit % 8);
        let both = u16::from(v & 63) << shift;
        body[byte] |= both as u8;
        body[byte + 1] |= (both >> 8) as u8;
    }
    out.truncate(HEADER + DENSE_BYTES);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::uv::hll::tests::filled;

    #[test]
    fn both_encodings_round_trip() {
        for n in [0, 1, 300, 5_000, 50_000] {
            let h = filled("d", n);
            let dense = encode_dense(&h.registers());
            assert_eq!((dense[4], dense.len()), (DENSE, HEADER + DENSE_BYTES));
            let chosen = encode(&h);
            for s in [dense, chosen] {
                let back = decode(&s).expect("valid");
                assert_eq!(back.registers(), h.registers());
                assert_eq!(back.count(), h.count());
            }
        }
        assert_eq!(
            encode(&filled("d", 300))[4],
            SPARSE,
            "small counters stay sparse"
        );
        let mut high = Box::new([0u8; REGISTERS]);
        high[7] = 40;
        assert_eq!(
            encode(&Hll::from_registers(high))[4],
            DENSE,
            "VAL holds at most 32"
        );
    }

    #[test]
    fn sparse_opcodes_decode() {
        // XZERO of 16,000, VAL 3 × 2, ZERO of 64, VAL 1 × 1, XZERO of the rest (317).
        let mut s = b"HYLL\x01\0\0\0\0\0\0\0\0\0\0\0".to_vec();
        let xzero = |n: usize| [0x40 | ((n - 1) >> 8) as u8, ((n - 1) & 0xff) as u8];
        s.extend(xzero(16_000));
        s.push(0x80 | (2 << 2) | 1);
        s.push(63);
        s.push(0x80);
        s.extend(xzero(REGISTERS - 16_000 - 2 - 64 - 1));
        let regs = decode(&s).expect("valid").registers();
        assert_eq!(&regs[16_000..16_002], &[3, 3]);
        assert_eq!(regs[16_066], 1);
        assert_eq!(regs.iter().filter(|r| **r != 0).count(), 3);
        // A run past the last register, or short of it, is not a HyperLogLog.
        s.push(0);
        assert!(decode(&s).is_none());
        assert!(decode(&s[..s.len() - 3]).is_none());
        assert!(decode(b"HYLX\x01\0\0\0\0\0\0\0\0\0\0\0").is_none());
    }
}
