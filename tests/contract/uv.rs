//! uv scenarios.
