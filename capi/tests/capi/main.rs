//! Tests of the drop-in `libnrt.so.1`, from outside (C, C++ and Python programs against an
//! installed prefix, `nm -D`) and in process (the Rust entry points).

mod exports;
mod faults;
mod inprocess;
mod nulls;
mod programs;
mod support;
mod zoo;
