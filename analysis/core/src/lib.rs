//! rtclab-core: the analyzer's fast path (the Python package `rtclab` calls it as `rtclab._core`).
pub mod join;
pub mod packet;
pub mod pcap;
#[cfg(feature = "python")]
mod python;
pub mod series;
