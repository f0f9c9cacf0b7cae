//! seckill scenarios.
