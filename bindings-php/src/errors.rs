//! The exception classes and the one mapping from core errors to them.
//!
//! ```text
//! Crawlq\Exception extends \Exception             ->getCode(): the kind as a string
//! ├── Crawlq\InvalidItemException                 $index, $input, $reason
//! ├── Crawlq\ConfigException
//! ├── Crawlq\InvalidArgumentException
//! ├── Crawlq\UnavailableException
//! │   └── Crawlq\TimeoutException
//! ├── Crawlq\ProtocolException
//! ├── Crawlq\LeaseLostException                   $leaseId, $token
//! └── Crawlq\ServerException
//! ```
//! They are plain PHP classes registered at module startup (no Rust state), so PHP fills in
//! the file, line and trace as for any exception. The string code is stored in `$code`, as
//! PDOException does.

use ext_php_rs::builders::{ClassBuilder, ClassProperty};
use ext_php_rs::exception::PhpException;
use ext_php_rs::flags::PropertyFlags;
use ext_php_rs::zend::{ClassEntry, ExecutorGlobals, ce};
use std::sync::atomic::{AtomicPtr, Ordering};

pub const BASE: &str = "Crawlq\\Exception";
const UNAVAILABLE: &str = "Crawlq\\UnavailableException";

/// (class, code, parent, extra public properties)
const CLASSES: [(&str, Option<&str>, &str, &[&str]); 9] = [
    (BASE, None, "Exception", &[]),
    (
        "Crawlq\\InvalidItemException",
        Some("INVALID_ITEM"),
        BASE,
        &["index", "input", "reason"],
    ),
    ("Crawlq\\ConfigException", Some("CONFIG"), BASE, &[]),
    (
        "Crawlq\\InvalidArgumentException",
        Some("INVALID_ARGUMENT"),
        BASE,
        &[],
    ),
    (UNAVAILABLE, Some("UNAVAILABLE"), BASE, &[]),
    (
        "Crawlq\\TimeoutException",
        Some("TIMEOUT"),
        UNAVAILABLE,
        &[],
    ),
    ("Crawlq\\ProtocolException", Some("PROTOCOL"), BASE, &[]),
    (
        "Crawlq\\LeaseLostException",
        Some("LEASE_LOST"),
        BASE,
        &["leaseId", "token"],
    ),
    ("Crawlq\\ServerException", Some("SERVER"), BASE, &[]),
];

/// The class entries, filled in as the classes are registered (index as in `CLASSES`).
static ENTRIES: [AtomicPtr<ClassEntry>; 9] = [const { AtomicPtr::new(std::ptr::null_mut()) }; 9];

fn entry(index: usize) -> Option<&'static ClassEntry> {
    // SAFETY: class entries live as long as the module; set once at startup.
    unsafe { ENTRIES[index].load(Ordering::Acquire).as_ref() }
}

macro_rules! keep {
    ($($i:literal),*) => {
        [$(|class: &'static mut ClassEntry, _| ENTRIES[$i].store(class, Ordering::Release)),*]
    };
}
const KEEP: [fn(&'static mut ClassEntry, ext_php_rs::args::ArgInfoTables); 9] =
    keep!(0, 1, 2, 3, 4, 5, 6, 7, 8);

fn exception_ce() -> &'static ClassEntry {
    ce::exception()
}

fn base_ce() -> &'static ClassEntry {
    entry(0).expect("Crawlq\\Exception is registered first")
}

fn unavailable_ce() -> &'static ClassEntry {
    entry(4).expect("Crawlq\\UnavailableException is registered before its subclass")
}

/// Module startup: register the classes, parents first.
pub extern "C" fn register(_ty: i32, _module_number: i32) -> i32 {
    for (index, (name, _code, parent, props)) in CLASSES.into_iter().enumerate() {
        let parent: ext_php_rs::class::ClassEntryInfo = match parent {
            "Exception" => (exception_ce, "\\Exception"),
            BASE => (base_ce, BASE),
            _ => (unavailable_ce, UNAVAILABLE),
        };
        let mut builder = ClassBuilder::new(name)
            .extends(parent)
            .registration(KEEP[index]);
        for prop in props {
            builder = builder.property(ClassProperty {
                name: (*prop).to_string(),
                flags: PropertyFlags::Public,
                default: None,
                docs: &[],
                ty: None,
                nullable: true,
                readonly: false,
                default_stub: None,
            });
        }
        if builder.register().is_err() {
            return 1;
        }
    }
    0
}

fn class_of(err: &crawlq::Error) -> Option<&'static ClassEntry> {
    entry(
        CLASSES
            .iter()
            .position(|c| c.1 == Some(err.code()))
            .unwrap_or(0),
    )
}

/// Throw the PHP exception for a core error. Returns the value to hand back as the method's
/// error (ignored by the engine, which keeps the exception already thrown).
pub fn throw(err: crawlq::Error) -> PhpException {
    let Some(class) = class_of(&err) else {
        return PhpException::from_message(err.to_string());
    };
    PhpException::new(err.to_string(), 0, class).throw();
    let extras: Vec<(&str, serde_json::Value)> = match &err {
        crawlq::Error::InvalidItem {
            index,
            input,
            reason,
        } => vec![
            ("index", serde_json::json!(index)),
            ("input", serde_json::json!(input)),
            ("reason", serde_json::json!(reason.code())),
        ],
        crawlq::Error::LeaseLost { id, token } => vec![
            ("leaseId", serde_json::json!(id)),
            ("token", serde_json::json!(token)),
        ],
        _ => vec![],
    };
    decorate(err.code(), extras);
    PhpException::from_message(String::new())
}

/// Set the string code (a protected property of \Exception, hence the scope) and the extra
/// public properties on the exception that was just thrown.
fn decorate(code: &str, extras: Vec<(&str, serde_json::Value)>) {
    let exception = ExecutorGlobals::get_mut().exception;
    if exception.is_null() {
        return;
    }
    // SAFETY: the engine keeps the pending exception alive; no other reference is in use.
    let object = unsafe { &mut *exception };
    let saved = {
        let mut globals = ExecutorGlobals::get_mut();
        std::mem::replace(
            &mut globals.fake_scope,
            std::ptr::from_ref(ce::exception()).cast_mut(),
        )
    };
    let _ = object.set_property("code", code);
    for (name, value) in extras {
        let _ = object.set_property(name, crate::convert::from_json(&value));
    }
    ExecutorGlobals::get_mut().fake_scope = saved;
}

/// A `\TypeError` (values that are not JSON, arguments of the wrong type).
pub fn type_error(message: String) -> PhpException {
    PhpException::new(message, 0, ce::type_error())
}
