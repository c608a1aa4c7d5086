//! Collecting every problem so that all of them are reported at once.

use proc_macro2::TokenStream;

/// The errors found so far.
#[derive(Default)]
pub(crate) struct Errors(Option<syn::Error>);

impl Errors {
    pub(crate) fn push(&mut self, error: syn::Error) {
        match &mut self.0 {
            Some(first) => first.combine(error),
            None => self.0 = Some(error),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    pub(crate) fn into_compile_errors(self) -> TokenStream {
        self.0.map(|e| e.to_compile_error()).unwrap_or_default()
    }
}

impl From<syn::Error> for Errors {
    fn from(error: syn::Error) -> Self {
        Errors(Some(error))
    }
}
