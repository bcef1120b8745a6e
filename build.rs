// `cargo test` links the test binaries against libpython; this interpreter is built with a
// shared libpython, so add its directory to the rpath instead of asking for LD_LIBRARY_PATH.
fn main() {
    pyo3_build_config::add_libpython_rpath_link_args();
}
