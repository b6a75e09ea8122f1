//! Tests of the one device opener: settings from flags and the environment, and what each
//! backend opens.

mod open;
mod settings;
