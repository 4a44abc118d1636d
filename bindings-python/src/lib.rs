//! `import crawlq`: the Python binding of the crawlq core. Types are converted and errors
//! mapped here; every queue operation is the core's.

mod convert;
mod errors;
mod queue;
mod runtime;
mod types;
mod work;

use pyo3::prelude::*;

#[pymodule]
fn crawlq(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<queue::Queue>()?;
    m.add_class::<queue::AsyncQueue>()?;
    m.add_class::<types::Lease>()?;
    m.add_class::<types::SeedReport>()?;
    m.add_class::<types::InvalidInput>()?;
    m.add_class::<work::Leased>()?;
    m.add_class::<work::AsyncLeased>()?;
    m.add_class::<work::Work>()?;
    m.add_class::<work::AsyncWork>()?;
    errors::register(m)?;
    Ok(())
}
