//! geo scenarios.
