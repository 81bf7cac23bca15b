//! Python bindings: each column becomes a numpy array without a copy.
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::PathBuf;

use crate::{join, packet, pcap, series};

/// Two numpy arrays, as a Python tuple.
type ArrayPair<'py, A, B> = PyResult<(Bound<'py, PyArray1<A>>, Bound<'py, PyArray1<B>>)>;

/// read_pcap(path, twcc_ext_id=3) -> dict: one numpy array per column, and "records", "non_ipv4", "span_ns"
/// ((first, last) record time of any kind, or None), "linktype",
/// "nanosecond", "snaplen", "error" (None, or why reading stopped early; the columns hold what came before).
#[pyfunction]
#[pyo3(signature = (path, twcc_ext_id = 3))]
fn read_pcap<'py>(py: Python<'py>, path: PathBuf, twcc_ext_id: u8) -> PyResult<Bound<'py, PyDict>> {
    let cap = py.detach(|| pcap::parse_file(&path, twcc_ext_id)).map_err(PyValueError::new_err)?;
    let d = PyDict::new(py);
    let c = cap.cols;
    macro_rules! put { ($($f:ident),*) => { $( d.set_item(stringify!($f), c.$f.into_pyarray(py))?; )* } }
    pcap::for_each_column!(put);
    d.set_item("records", cap.records)?;
    d.set_item("non_ipv4", cap.non_ipv4)?;
    d.set_item("span_ns", cap.span_ns)?;
    d.set_item("linktype", cap.linktype)?;
    d.set_item("nanosecond", cap.nanosecond)?;
    d.set_item("snaplen", cap.snaplen)?;
    d.set_item("error", cap.error)?;
    Ok(d)
}

/// join_keys(sent_keys, recv_keys) -> (sent_match, recv_match): index arrays, -1 where nothing matched.
#[pyfunction]
fn join_keys<'py>(
    py: Python<'py>,
    sent: PyReadonlyArray1<'py, u64>,
    recv: PyReadonlyArray1<'py, u64>,
) -> ArrayPair<'py, i64, i64> {
    let (s, r) = {
        let sent = sent.as_slice()?;
        let recv = recv.as_slice()?;
        join::join_keys(sent, recv)
    };
    Ok((s.into_pyarray(py), r.into_pyarray(py)))
}

/// rfc3550_jitter_s(recv_ns, rtp_ts, clock_hz) -> the running RFC 3550 jitter in seconds after each packet.
#[pyfunction]
fn rfc3550_jitter_s<'py>(
    py: Python<'py>,
    recv_ns: PyReadonlyArray1<'py, i64>,
    rtp_ts: PyReadonlyArray1<'py, u32>,
    clock_hz: f64,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let recv_ns = recv_ns.as_slice()?;
    let rtp_ts = rtp_ts.as_slice()?;
    if recv_ns.len() != rtp_ts.len() {
        return Err(PyValueError::new_err("recv_ns and rtp_ts differ in length"));
    }
    Ok(series::rfc3550_jitter_s(recv_ns, rtp_ts, clock_hz).into_pyarray(py))
}

/// group_ids(keys) -> (group of each element, index of each group's first element), groups numbered by first appearance.
#[pyfunction]
fn group_ids<'py>(py: Python<'py>, keys: PyReadonlyArray1<'py, u64>) -> ArrayPair<'py, u32, i64> {
    let (ids, first) = join::group_ids(keys.as_slice()?);
    Ok((ids.into_pyarray(py), first.into_pyarray(py)))
}

/// direction_keys(ip_src, ip_dst, key, ip_id, a, b) -> (rows from a to b, their join keys mixed with ip.id)
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn direction_keys<'py>(
    py: Python<'py>,
    src: PyReadonlyArray1<'py, u32>,
    dst: PyReadonlyArray1<'py, u32>,
    key: PyReadonlyArray1<'py, u64>,
    ip_id: PyReadonlyArray1<'py, u16>,
    a: u32,
    b: u32,
) -> ArrayPair<'py, i64, u64> {
    let (rows, keys) = join::direction_keys(src.as_slice()?, dst.as_slice()?, key.as_slice()?, ip_id.as_slice()?, a, b);
    Ok((rows.into_pyarray(py), keys.into_pyarray(py)))
}

/// flow_ids(direction, ip_src, ip_dst, sport, dport, proto, cls, ssrc, rtp_cls) -> (flow of each row, first rows)
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn flow_ids<'py>(
    py: Python<'py>,
    direction: PyReadonlyArray1<'py, u8>,
    src: PyReadonlyArray1<'py, u32>,
    dst: PyReadonlyArray1<'py, u32>,
    sport: PyReadonlyArray1<'py, u16>,
    dport: PyReadonlyArray1<'py, u16>,
    proto: PyReadonlyArray1<'py, u8>,
    cls: PyReadonlyArray1<'py, u8>,
    ssrc: PyReadonlyArray1<'py, u32>,
    rtp_cls: u8,
) -> ArrayPair<'py, u32, i64> {
    let (ids, first) = join::flow_ids(
        direction.as_slice()?,
        src.as_slice()?,
        dst.as_slice()?,
        sport.as_slice()?,
        dport.as_slice()?,
        proto.as_slice()?,
        cls.as_slice()?,
        ssrc.as_slice()?,
        rtp_cls,
    );
    Ok((ids.into_pyarray(py), first.into_pyarray(py)))
}

/// join_key_mix(keys, ip_ids) -> the packet join keys: each hash mixed with its IPv4 identification (join.rs).
#[pyfunction]
fn join_key_mix<'py>(
    py: Python<'py>,
    keys: PyReadonlyArray1<'py, u64>,
    ip_ids: PyReadonlyArray1<'py, u16>,
) -> PyResult<Bound<'py, PyArray1<u64>>> {
    let (keys, ip_ids) = (keys.as_slice()?, ip_ids.as_slice()?);
    if keys.len() != ip_ids.len() {
        return Err(PyValueError::new_err("keys and ip_ids differ in length"));
    }
    let out: Vec<u64> = keys.iter().zip(ip_ids).map(|(&k, &i)| join::mix_ip_id(k, i)).collect();
    Ok(out.into_pyarray(py))
}

/// fnv1a64(data) -> the packet key of docs/bottleneck-log.md over `data`.
#[pyfunction]
fn fnv1a64(data: &[u8]) -> u64 {
    packet::fnv1a64(data)
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(read_pcap, m)?)?;
    m.add_function(wrap_pyfunction!(join_keys, m)?)?;
    m.add_function(wrap_pyfunction!(rfc3550_jitter_s, m)?)?;
    m.add_function(wrap_pyfunction!(fnv1a64, m)?)?;
    m.add_function(wrap_pyfunction!(group_ids, m)?)?;
    m.add_function(wrap_pyfunction!(direction_keys, m)?)?;
    m.add_function(wrap_pyfunction!(flow_ids, m)?)?;
    m.add_function(wrap_pyfunction!(join_key_mix, m)?)?;
    m.add("KEY_BYTES", packet::KEY_BYTES)?;
    Ok(())
}
