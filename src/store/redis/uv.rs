//! Unique visitors on HyperLogLog (PFADD/PFCOUNT/PFMERGE) with page views beside them. on Redis.
