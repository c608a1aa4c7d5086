//! Generated code uses absolute paths and `__idem_*` locals only, so local items named like
//! the crates and prelude items it uses change nothing.
#![allow(dead_code, non_camel_case_types)]

mod core {}
mod idem_core {}
mod std {}
mod serde {}

struct Option;
struct Some;
struct None;
struct Ok;
struct Err;
struct Box;
struct Prepare;
struct Idempotency;
fn installed() {}
fn run() {}

use ::idem_core::idempotent;

#[idempotent(key = "order")]
async fn charge(order: String) -> ::core::result::Result<u64, ::idem_core::Error> {
    let prep = 1;
    ::core::result::Result::Ok(order.len() as u64 + prep)
}

#[idempotent(key = "order")]
async fn shadowing(
    order: u64,
    __idem_other: u64,
) -> ::core::result::Result<u64, ::idem_core::Error> {
    ::core::result::Result::Ok(order + __idem_other)
}

#[idempotent(key = "id")]
async fn generic<T: ::serde::Serialize, const N: usize>(
    id: u64,
    order: T,
) -> ::core::result::Result<usize, ::idem_core::Error> {
    let _ = (id, order);
    ::core::result::Result::Ok(N)
}

struct Service;

#[idempotent]
impl Service {
    #[idempotent(key = "order", skip = "self")]
    async fn charge(&self, order: u64) -> ::core::result::Result<u64, ::idem_core::Error> {
        ::core::result::Result::Ok(order)
    }
}

fn main() {
    drop(charge(::std::string::String::new()));
    drop(shadowing(1, 2));
    drop(generic::<u8, 3>(1, 2));
    drop(Service.charge(1));
}
