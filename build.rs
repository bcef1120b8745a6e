// `cargo test` links the test binaries against libpython; this interpreter is built with a
// shared libpython, so add its directory to the rpath instead of asking for LD_LIBRARY_PATH.
// `Py_GIL_DISABLED` is set for free-threaded interpreters.
fn main() {
    println!("cargo::rustc-check-cfg=cfg(Py_GIL_DISABLED)");
    pyo3_build_config::use_pyo3_cfgs();
    pyo3_build_config::add_libpython_rpath_link_args();
}
