//! The default name of a function, spelt from the tokens so that it stays the same across
//! compiler versions: `module_path!()`, the impl the function is in, its name and, for a generic
//! function, what each type and const parameter stands for in the call.
//!
//! ```text
//! my_app::payments::charge                       a free function
//! my_app::payments::Stripe::charge               a method of `impl Stripe`
//! my_app::payments::<Stripe as Charger>::charge  a method of `impl Charger for Stripe`
//! my_app::payments::Repo<T>::insert[T = u64]     a method of `impl<T> Repo<T>`, on a `Repo<u64>`
//! my_app::payments::load[T = alloc::string::String]  `load::<String>`
//! my_app::payments::save[item = my_app::User]    `save(item: impl Serialize)` given a `User` or `&User`
//! ```

use proc_macro2::{Delimiter, Spacing, TokenStream, TokenTree};
use quote::{quote, ToTokens};
use syn::ext::IdentExt;
use syn::{GenericParam, Generics, Ident, ItemFn, ItemImpl, LitStr};

/// The impl block a method is in, as its default name spells it.
pub(crate) struct Owner {
    /// `Stripe`, `Repo<T>` or `<Stripe as Charger>`, as written.
    spelt: String,
    /// The impl's type and const parameters.
    params: Vec<Param>,
}

impl Owner {
    /// The owner of the functions in `block`.
    pub(crate) fn of(block: &ItemImpl) -> Owner {
        let self_ty = spell(block.self_ty.to_token_stream());
        let spelt = match &block.trait_ {
            Some((bang, path, _)) => format!(
                "<{self_ty} as {}{}>",
                if bang.is_some() { "!" } else { "" },
                spell(path.to_token_stream())
            ),
            None => self_ty,
        };
        Owner {
            spelt,
            params: Param::of(&block.generics),
        }
    }
}

/// A generic parameter that tells instantiations apart; lifetimes do not.
#[derive(Clone)]
enum Param {
    Type(Ident),
    Const(Ident),
}

impl Param {
    fn of(generics: &Generics) -> Vec<Param> {
        generics
            .params
            .iter()
            .filter_map(|param| match param {
                GenericParam::Type(param) => Some(Param::Type(param.ident.clone())),
                GenericParam::Const(param) => Some(Param::Const(param.ident.clone())),
                GenericParam::Lifetime(_) => None,
            })
            .collect()
    }

    /// `("T", &type_name::<T>())` or `("N", &N)`: its name and what it stands for.
    fn instance(&self) -> TokenStream {
        match self {
            Param::Type(ident) => {
                let name = ident.unraw().to_string();
                quote!((#name, &::core::any::type_name::<#ident>()))
            }
            Param::Const(ident) => {
                let name = ident.unraw().to_string();
                quote!((#name, &#ident))
            }
        }
    }
}

/// The default name of a function, as the expressions generated code uses.
pub(crate) struct DefaultName {
    /// The name without what a call's types stand for: a `&'static str` constant, under which
    /// the function is registered.
    pub(crate) path: TokenStream,
    /// The name of the call: `path` for a function that is neither generic nor takes
    /// `impl Trait`, else a `&String` made at run time.
    pub(crate) name: TokenStream,
}

/// The default name of `func`, a method of `owner` if given. `erased` are the arguments whose
/// type is `impl Trait`: like a type parameter's, the type each call passes is named, so that
/// `save(User { .. })` and `save(Order { .. })` never share records.
pub(crate) fn default_name(
    func: &ItemFn,
    owner: Option<&Owner>,
    erased: &[Ident],
    private: &TokenStream,
) -> DefaultName {
    let mut path = String::from("::");
    if let Some(owner) = owner {
        path.push_str(&owner.spelt);
        path.push_str("::");
    }
    path.push_str(&func.sig.ident.unraw().to_string());
    let path = LitStr::new(&path, func.sig.ident.span());
    let path = quote!(::core::concat!(::core::module_path!(), #path));
    let params: Vec<Param> = owner
        .into_iter()
        .flat_map(|owner| owner.params.iter().cloned())
        .chain(Param::of(&func.sig.generics))
        .collect();
    if params.is_empty() && erased.is_empty() {
        return DefaultName {
            name: path.clone(),
            path,
        };
    }
    let instances = params
        .iter()
        .map(Param::instance)
        .chain(erased.iter().map(|arg| {
            let name = arg.unraw().to_string();
            quote!((#name, &#private::erased_type_name(&#arg)))
        }));
    DefaultName {
        name: quote!(&#private::instance_name(#path, &[#(#instances),*])),
        path,
    }
}

/// The type parameters of `func` and of its impl block, if any.
pub(crate) fn type_params(func: &ItemFn, owner: Option<&Owner>) -> Vec<Ident> {
    owner
        .into_iter()
        .flat_map(|owner| owner.params.iter().cloned())
        .chain(Param::of(&func.sig.generics))
        .filter_map(|param| match param {
            Param::Type(ident) => Some(ident),
            Param::Const(_) => None,
        })
        .collect()
}

/// `tokens` as text, with spaces only where Rust needs or people expect them: `Repo<T>`,
/// `HashMap<K, V>`, `&'a mut (dyn Charger + Send)`, `fn(u8) -> u8`.
pub(crate) fn spell(tokens: TokenStream) -> String {
    let mut out = String::new();
    // The word just written, if the last token was one: a keyword before a group is followed by
    // a space (`mut (A, B)`), a name is not (`fn(u8)`).
    let mut word: Option<String> = None;
    let mut tokens = tokens.into_iter().peekable();
    while let Some(token) = tokens.next() {
        match token {
            TokenTree::Ident(_) | TokenTree::Literal(_) => {
                if word.is_some() {
                    out.push(' ');
                }
                let text = token.to_string();
                out.push_str(&text);
                word = Some(text);
            }
            TokenTree::Group(group) => {
                if word.as_deref().is_some_and(is_keyword) {
                    out.push(' ');
                }
                let (open, close) = match group.delimiter() {
                    Delimiter::Parenthesis => ("(", ")"),
                    Delimiter::Bracket => ("[", "]"),
                    Delimiter::Brace => ("{", "}"),
                    Delimiter::None => ("", ""),
                };
                out.push_str(open);
                out.push_str(&spell(group.stream()));
                out.push_str(close);
                word = None;
            }
            TokenTree::Punct(punct) => {
                let mut op = punct.as_char().to_string();
                let mut spacing = punct.spacing();
                while spacing == Spacing::Joint {
                    match tokens.peek() {
                        Some(TokenTree::Punct(next)) => {
                            op.push(next.as_char());
                            spacing = next.spacing();
                            tokens.next();
                        }
                        _ => break,
                    }
                }
                match op.as_str() {
                    "+" | "=" | "->" | "=>" => {
                        out.push(' ');
                        out.push_str(&op);
                        out.push(' ');
                    }
                    "," | ";" => {
                        out.push_str(&op);
                        out.push(' ');
                    }
                    _ => out.push_str(&op),
                }
                word = None;
            }
        }
    }
    out
}

/// The keywords that can stand before a parenthesised type: `&mut (A, B)`, `dyn (Trait)`.
fn is_keyword(word: &str) -> bool {
    matches!(word, "mut" | "dyn" | "impl" | "as" | "const" | "for")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner(header: &str) -> String {
        let block: ItemImpl = syn::parse_str(&format!("{header} {{}}")).unwrap();
        Owner::of(&block).spelt
    }

    #[test]
    fn an_impl_is_spelt_as_written_without_spaces_inside_paths() {
        assert_eq!(owner("impl Stripe"), "Stripe");
        assert_eq!(owner("impl billing :: Stripe"), "billing::Stripe");
        assert_eq!(owner("impl Charger for Stripe"), "<Stripe as Charger>");
        assert_eq!(
            owner("impl<K: Hash, V> Store<K> for Cache<K, V> where V: Clone"),
            "<Cache<K, V> as Store<K>>"
        );
        assert_eq!(
            owner("impl<'a> Charger for &'a mut (dyn Gateway<Item = u8> + Send)"),
            "<&'a mut (dyn Gateway<Item = u8> + Send) as Charger>"
        );
        assert_eq!(
            owner("impl<const N: usize> Buf<[u8; N], { N + 1 }>"),
            "Buf<[u8; N], {N + 1}>"
        );
        assert_eq!(
            owner("impl Handler<fn(u8) -> u8> for S"),
            "<S as Handler<fn(u8) -> u8>>"
        );
    }

    fn name(item: &str, header: Option<&str>) -> String {
        let func: ItemFn = syn::parse_str(item).unwrap();
        let block: Option<ItemImpl> = header.map(|h| syn::parse_str(&format!("{h} {{}}")).unwrap());
        let owner = block.as_ref().map(Owner::of);
        default_name(
            &func,
            owner.as_ref(),
            &[],
            &quote!(::idem_core::__private01),
        )
        .name
        .to_string()
    }

    #[test]
    fn a_function_that_is_not_generic_gets_a_static_name() {
        assert_eq!(
            name("async fn charge() {}", None),
            r#":: core :: concat ! (:: core :: module_path ! () , "::charge")"#
        );
        assert_eq!(
            name("async fn r#type(&self) {}", Some("impl Charger for Stripe")),
            r#":: core :: concat ! (:: core :: module_path ! () , "::<Stripe as Charger>::type")"#
        );
    }

    #[test]
    fn type_and_const_parameters_of_the_impl_then_the_function_are_named_at_run_time() {
        let out = name(
            "async fn insert<'a, U, const M: u8>(&self) {}",
            Some("impl<'b, T, const N: usize> Repo<T, N>"),
        );
        let expected = [
            "& :: idem_core :: __private01 :: instance_name (",
            r#":: core :: concat ! (:: core :: module_path ! () , "::Repo<T, N>::insert") , & ["#,
            r#"("T" , & :: core :: any :: type_name :: < T > ()) , ("N" , & N) , "#,
            r#"("U" , & :: core :: any :: type_name :: < U > ()) , ("M" , & M)])"#,
        ];
        assert_eq!(out, expected.concat());
    }
}
