//! JSON with `//` and `/* */` comments, as NVIDIA ships `cufile.json`:
//! the parser of [`zerohop_known::jsonc`], which the linter shares.

pub use zerohop_known::jsonc::{JsoncError, parse, strip_comments};
