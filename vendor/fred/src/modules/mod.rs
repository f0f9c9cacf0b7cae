pub mod backchannel;
/// Utility functions for reading or changing global config values.
pub mod inner;
pub mod metrics;
pub mod response;

#[cfg(feature = "mocks")]
#[cfg_attr(docsrs, doc(cfg(feature = "mocks")))]
pub mod mocks;
