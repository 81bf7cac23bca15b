// Links libnetfilter_queue (and libnfnetlink) as pkg-config describes them.
fn main() {
    if let Err(e) = pkg_config::Config::new().probe("libnetfilter_queue") {
        panic!("libnetfilter_queue not found by pkg-config ({e}); install libnetfilter-queue-dev and pkg-config");
    }
}
