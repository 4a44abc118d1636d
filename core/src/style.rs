//! Conversions to and from each language style (filled in with the bindings).
