//! cudalog: an incremental static-analysis database for CUDA code bases.
//!
//! Pipeline (one module per stage, each calling only the stages before it):
//! [`workspace`] finds files, [`frontend`] parses and lowers them to the
//! [`ir`], [`db`] caches every step in salsa, [`store`] writes the facts to
//! SQLite, [`index`] drives a run, [`cli`] is the command line.
#![warn(missing_docs)]

pub mod bounds;
pub mod check;
pub mod cli;
pub mod config;
#[allow(missing_docs)] // salsa's generated accessors carry no docs
pub mod db;
pub mod facts;
pub mod frontend;
pub mod index;
pub mod ir;
pub mod report;
pub mod rules;
pub mod store;
pub mod watch;
pub mod workspace;
