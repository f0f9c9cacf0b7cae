//! Nearby search on geo sets (GEOADD/GEOSEARCH) on Redis.
