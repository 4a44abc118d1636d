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
//! ├── Crawlq\ServerException
//! └── Crawlq\CorruptException
//! ```
//! Built from the core's table of error kinds (`crawlq::ERROR_KINDS`).
//! They are plain PHP classes registered at module startup (no Rust state), so PHP fills in
//! the file, line and trace as for any exception. The string code is stored in `$code`, as
//! PDOException does.

use crawlq::{ERROR_KINDS, ErrorKind, Style};
use ext_php_rs::builders::{ClassBuilder, ClassProperty};
use ext_php_rs::exception::PhpException;
use ext_php_rs::flags::PropertyFlags;
use ext_php_rs::zend::{ClassEntry, ExecutorGlobals, ce};
use std::sync::atomic::{AtomicPtr, Ordering};

pub const BASE: &str = "Crawlq\\Exception";

/// Class entries: the base class, then one per core error kind in `ERROR_KINDS` order, filled
/// in as the classes are registered.
static ENTRIES: [AtomicPtr<ClassEntry>; 1 + ERROR_KINDS.len()] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; 1 + ERROR_KINDS.len()];

fn entry(index: usize) -> Option<&'static ClassEntry> {
    // SAFETY: class entries live as long as the module; set once at startup.
    unsafe { ENTRIES[index].load(Ordering::Acquire).as_ref() }
}

/// `ClassBuilder::registration` takes a plain fn: one per slot.
macro_rules! keep {
    ($($i:literal),*) => {
        [$(|class: &'static mut ClassEntry, _| ENTRIES[$i].store(class, Ordering::Release)),*]
    };
}
const KEEP: [fn(&'static mut ClassEntry, ext_php_rs::args::ArgInfoTables); 1 + ERROR_KINDS.len()] =
    keep!(0, 1, 2, 3, 4, 5, 6, 7, 8, 9);

fn class_name(kind: &ErrorKind) -> String {
    format!("Crawlq\\{}Exception", kind.name)
}

fn exception_ce() -> &'static ClassEntry {
    ce::exception()
}

/// The parents a class can have: `\Exception`, the base class, or another kind's class. Each is
/// a plain fn returning the entry, as `ClassBuilder::extends` wants.
macro_rules! parents {
    ($($i:literal),*) => {
        [$(|| entry($i).expect("parents are registered first")),*]
    };
}
const PARENTS: [fn() -> &'static ClassEntry; 1 + ERROR_KINDS.len()] =
    parents!(0, 1, 2, 3, 4, 5, 6, 7, 8, 9);

/// Module startup: register the classes, parents first, from the core's table of error kinds.
pub extern "C" fn register(_ty: i32, _module_number: i32) -> i32 {
    let mut classes: Vec<(String, ext_php_rs::class::ClassEntryInfo, Vec<String>)> =
        vec![(BASE.to_string(), (exception_ce, "\\Exception"), Vec::new())];
    let names: Vec<String> = ERROR_KINDS.iter().map(class_name).collect();
    for kind in ERROR_KINDS {
        let parent = match kind.parent {
            Some(code) => {
                let i = ERROR_KINDS
                    .iter()
                    .position(|k| k.code == code)
                    .expect("parent")
                    + 1;
                // the parent's name lives as long as the module (leaked once at startup)
                let name: &'static str = Box::leak(names[i - 1].clone().into_boxed_str());
                (PARENTS[i], name)
            }
            None => (PARENTS[0], BASE),
        };
        let props = kind
            .fields
            .iter()
            .map(|f| crawlq::binding::json::field_name(f, false, Style::Camel))
            .collect();
        classes.push((class_name(&kind), parent, props));
    }
    for (index, (name, parent, props)) in classes.into_iter().enumerate() {
        let mut builder = ClassBuilder::new(name)
            .extends(parent)
            .registration(KEEP[index]);
        for prop in props {
            builder = builder.property(ClassProperty {
                name: prop,
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
        ERROR_KINDS
            .iter()
            .position(|k| k.code == err.code())
            .map_or(0, |i| i + 1),
    )
}

/// Throw the PHP exception for a core error. Returns the value to hand back as the method's
/// error (ignored by the engine, which keeps the exception already thrown).
pub fn throw(err: crawlq::Error) -> PhpException {
    let Some(class) = class_of(&err) else {
        return PhpException::from_message(err.to_string());
    };
    PhpException::new(err.to_string(), 0, class).throw();
    decorate(err.code(), err.fields(Style::Camel));
    PhpException::from_message(String::new())
}

/// Set the string code (a protected property of \Exception, hence the scope) and the extra
/// public properties on the exception that was just thrown.
fn decorate(code: &str, extras: Vec<(String, serde_json::Value)>) {
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
        let _ = object.set_property(&name, crate::convert::from_json(&value));
    }
    ExecutorGlobals::get_mut().fake_scope = saved;
}

/// A `\TypeError` (values that are not JSON, arguments of the wrong type).
pub fn type_error(message: String) -> PhpException {
    PhpException::new(message, 0, ce::type_error())
}
