//! Result types written through aliases are recognised by a trait bound, not by their spelling.

use idem_core::idempotent;

mod errors {
    #[derive(Debug)]
    pub enum AppError {
        Idem(idem_core::Error),
    }

    impl From<idem_core::Error> for AppError {
        fn from(error: idem_core::Error) -> Self {
            AppError::Idem(error)
        }
    }

    pub type Result<T, E = AppError> = std::result::Result<T, E>;
}

type Outcome = core::result::Result<String, errors::AppError>;

#[idempotent(key = "order")]
async fn with_anyhow(order: String) -> anyhow::Result<u64> {
    anyhow::ensure!(!order.is_empty(), "empty order");
    Ok(order.len() as u64)
}

#[idempotent(key = "order")]
async fn with_own_alias(order: String) -> errors::Result<u64> {
    Ok(order.len() as u64)
}

#[idempotent(key = "order")]
async fn with_full_alias(order: String) -> Outcome {
    let _ = with_own_alias(order.clone()).await?;
    Ok(order)
}

#[idempotent(key = "order")]
async fn with_question_mark(
    order: String,
) -> Result<u64, Box<dyn std::error::Error + Send + Sync>> {
    let parsed: u64 = order.parse()?;
    Ok(parsed)
}

fn main() {
    drop(with_anyhow("o-1".into()));
    drop(with_own_alias("o-1".into()));
    drop(with_full_alias("o-1".into()));
    drop(with_question_mark("1".into()));
}
