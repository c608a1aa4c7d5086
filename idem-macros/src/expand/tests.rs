//! The expansion's unit tests: what the attribute writes for each argument.

use crate::{expand_method_text, expand_text};

#[test]
fn the_signature_is_kept_and_the_body_runs_through_private_run() {
    let out = expand_text(
        r#"key = "req.order_id + op", ttl = "1h""#,
        "pub(crate) async fn charge<'a>(req: &'a Req, op: &str) -> Result<R, E> { body() }",
    );
    assert!(
        out.starts_with("pub (crate) async fn charge < 'a > (req : & 'a Req , op : & str) -> Result < R , E > {"),
        "{out}"
    );
    for piece in [
        r#"{ :: idem_core :: __private01 :: inventory :: submit ! { :: idem_core :: __private01 :: Registration :: new (:: core :: concat ! (:: core :: module_path ! () , "::charge") , :: core :: file ! () , :: core :: line ! () , :: core :: column ! ()) }"#,
        r#"let mut __idem_prep = :: idem_core :: __private01 :: Prepare :: new (:: idem_core :: installed () , :: core :: concat ! (:: core :: module_path ! () , "::charge")) ;"#,
        r#"__idem_prep . registered (:: core :: concat ! (:: core :: module_path ! () , "::charge")) ;"#,
        "__idem_prep . fingerprint (& req) ;",
        "__idem_prep . fingerprint (& op) ;",
        r#"__idem_prep . part_of (& (req . order_id) , "req.order_id") ;"#,
        r#"__idem_prep . part_of (& (op) , "op") ;"#,
        "__idem_prep . ttl_ms (3600000u64) ;",
        ":: idem_core :: __private01 :: run :: < Result < R , E > , _ > (__idem_prep , async move {",
        "body ()",
        "body () }) . await }",
    ] {
        assert!(out.contains(piece), "missing `{piece}` in {out}");
    }
    assert!(!out.contains("compile_error"), "{out}");
}

#[test]
fn methods_are_named_by_their_self_type_and_receivers_are_not_fingerprinted() {
    let out = expand_method_text(
        r#"store = "self.idem", scope = "self.tenant""#,
        "async fn charge(&self, order: u64) -> Result<u64, E> { Ok(order) }",
    );
    assert!(
        out.contains(r#"Prepare :: new (:: idem_core :: __private01 :: handle (& (self . idem)) , :: core :: concat ! (:: core :: module_path ! () , "::Service::charge")) ;"#),
        "{out}"
    );
    assert!(out.contains("handle (& (self . idem))"), "{out}");
    assert!(out.contains("fingerprint (& order)"), "{out}");
    assert!(!out.contains("fingerprint (& self"), "{out}");
    assert!(out.contains("key_by_fingerprint"), "{out}");
}

#[test]
fn arguments_that_exist_only_under_cfg_are_fingerprinted_under_it() {
    let out = expand_text(
        r#"key = "id""#,
        r#"async fn f(id: u64, #[cfg(feature = "audit")] actor: String) -> Result<u64, E> { Ok(id) }"#,
    );
    assert!(
        out.contains(r#"# [cfg (feature = "audit")] __idem_prep . fingerprint (& actor) ;"#),
        "{out}"
    );
}

#[test]
fn arguments_whose_type_the_caller_picks_are_bounded_by_serialize_itself() {
    let out = expand_text(
        "",
        "async fn f<T: Send>(a: impl Into<String>, b: &T, c: u64) -> Result<u64, E> { Ok(c) }",
    );
    assert!(out.contains("fingerprint_param (& a)"), "{out}");
    assert!(out.contains("fingerprint_param (& b)"), "{out}");
    assert!(out.contains("__idem_prep . fingerprint (& c)"), "{out}");
    assert!(
        out.contains(r#"("a" , & :: idem_core :: __private01 :: erased_type_name (& a))"#),
        "the impl Trait argument's type is in the name: {out}"
    );
}

#[test]
fn under_async_trait_the_rebinding_of_an_argument_the_setup_reads_may_go_unused() {
    let item = "fn f<'a>(&'a self, order: String, note: String) \
        -> ::core::pin::Pin<Box<dyn ::core::future::Future<Output = Result<u64, E>> + Send + 'a>> \
        { Box::pin(async move { let __self = self; let order = order; let note = note; Ok(1) }) }";
    let out = expand_method_text(r#"key = "order", skip = "self, note""#, item);
    assert!(
        out.contains("# [allow (unused_variables)] let order = order ;"),
        "{out}"
    );
    assert!(
        out.contains("; let note = note ;"),
        "a skipped one still warns: {out}"
    );
}

#[test]
fn raw_identifiers_in_keys_scopes_and_stores_stay_raw() {
    let out = expand_text(
        r#"key = "req.r#type + r#ref", scope = "r#ref""#,
        "async fn f(req: &Req, r#ref: &str) -> Result<u64, E> { Ok(1) }",
    );
    assert!(out.contains("req . r#type"), "{out}");
    assert!(out.contains("scope (& (r#ref))"), "{out}");
}

#[test]
fn on_abort_is_set_through_private_only_when_given() {
    let item = "async fn f(id: u64) -> Result<u64, E> { Ok(id) }";
    let out = expand_text(r#"key = "id", on_abort = "release""#, item);
    assert!(
        out.contains("__idem_prep . on_abort (:: idem_core :: OnAbort :: Release) ;"),
        "{out}"
    );
    let out = expand_text(r#"key = "id", on_abort = " fail ""#, item);
    assert!(out.contains("OnAbort :: Fail"), "{out}");
    let out = expand_text(r#"key = "id""#, item);
    assert!(!out.contains("on_abort"), "{out}");
}

#[test]
fn crate_overrides_every_path_to_idem_core() {
    let out = expand_text(
        r#"crate = "my::idem", key = "id", store_err = "all""#,
        "async fn f(id: u64) -> Result<u64, E> { Ok(id) }",
    );
    assert!(!out.contains("idem_core"), "{out}");
    assert!(
        out.contains("my :: idem :: __private01 :: run_storing"),
        "{out}"
    );
    assert!(
        out.contains("my :: idem :: __private01 :: all_errors"),
        "{out}"
    );
}

#[test]
fn without_ttl_nothing_sets_it_and_lease_is_checked_against_the_default_by_idem_core() {
    let item = "async fn f(id: u64) -> Result<u64, E> { Ok(id) }";
    let out = expand_text(r#"key = "id", lease = "1m""#, item);
    assert!(!out.contains("ttl_ms"), "{out}");
    assert!(
        out.contains(
            "const _ : () = :: idem_core :: __private01 :: lease_within_default_ttl (60000u64) ;"
        ),
        "{out}"
    );
    let out = expand_text(r#"key = "id", lease = "1m", ttl = "1h""#, item);
    assert!(out.contains("ttl_ms (3600000u64)"), "{out}");
    assert!(!out.contains("lease_within_default_ttl"), "{out}");
}
