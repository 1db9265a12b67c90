//! Optimistic concurrency (docs/api.md, "Revisions and If-Match"): the precondition a write
//! states (an `If-Match` header, a `revision` in its body), checked against the resource's
//! current revision, and the `ETag` of single-resource answers.
//!
//! Invariants: handlers check a precondition inside the transaction that writes, after the
//! resource is found (404 first) and before its body is judged, so of two writes based on
//! one revision exactly one passes; a request that states none behaves as it always did;
//! `If-Match` compares strongly (RFC 9110 §13.1.1): a weak tag never matches.

use serde_json::{Map, Value};

use crate::api::Req;
use crate::error::ApiError;
use crate::store::changes::Revised;

/// What a write requires of the resource's current revision.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Precondition {
    /// From `If-Match`; `None` when the header is absent.
    header: Option<Match>,
    /// From the body's `revision`; `None` when absent or `null`.
    body: Option<i64>,
}

/// A parsed `If-Match` value.
#[derive(Debug, PartialEq, Eq)]
enum Match {
    /// `*`: any current revision (the resource exists).
    Any,
    /// A list of entity tags; `None` for one that can match no revision (weak, or not a
    /// number).
    Revisions(Vec<Option<i64>>),
}

impl Precondition {
    /// The precondition of a request without a JSON body: its `If-Match` header.
    pub fn of(req: &Req) -> Result<Precondition, ApiError> {
        let header = match req.if_match.as_deref() {
            None => None,
            Some(text) => Some(parse_if_match(text).ok_or_else(|| {
                ApiError::validation(
                    "If-Match",
                    "must be * or a list of quoted revisions such as \"3\" (the ETag of the \
                     resource as read)",
                )
            })?),
        };
        Ok(Precondition { header, body: None })
    }

    /// The precondition of a request with a JSON object body: its `If-Match` header and the
    /// body's `revision`. Both must hold when both are given.
    pub fn with_body(req: &Req, body: &Map<String, Value>) -> Result<Precondition, ApiError> {
        let precondition = Precondition::of(req)?;
        let body = match body.get("revision") {
            None | Some(Value::Null) => None,
            Some(value) => match value.as_i64() {
                Some(revision) if revision >= 1 => Some(revision),
                _ => {
                    return Err(ApiError::validation(
                        "revision",
                        "must be the integer revision the change is based on (at least 1), \
                         or null",
                    ))
                }
            },
        };
        Ok(Precondition {
            body,
            ..precondition
        })
    }

    /// Passes when every stated condition holds for `current`; else 412
    /// `PRECONDITION_FAILED` naming the current revision.
    pub fn check(&self, resource: Revised, current: i64) -> Result<(), ApiError> {
        let header_holds = match &self.header {
            None | Some(Match::Any) => true,
            Some(Match::Revisions(revisions)) => revisions.contains(&Some(current)),
        };
        let body_holds = self.body.is_none_or(|revision| revision == current);
        if header_holds && body_holds {
            return Ok(());
        }
        Err(ApiError::PreconditionFailed {
            resource: match resource {
                Revised::Host => "host",
                Revised::Group => "group",
                Revised::Forward => "forward rule",
                Revised::Key => "key",
                Revised::Identity => "identity",
            },
            current,
        })
    }
}

/// The `ETag` header value of a resource at `revision`: the revision, quoted.
pub fn etag(revision: i64) -> String {
    format!("\"{revision}\"")
}

/// `*`, or a comma-separated list of entity tags (`"3"`, `W/"3"`), empty elements allowed
/// (RFC 9110 §5.6.1). `None` when the text is neither.
fn parse_if_match(text: &str) -> Option<Match> {
    const OWS: [char; 2] = [' ', '\t'];
    if text.trim_matches(OWS) == "*" {
        return Some(Match::Any);
    }
    let mut rest = text;
    let mut revisions = Vec::new();
    loop {
        rest = rest.trim_start_matches([' ', '\t', ',']);
        if rest.is_empty() {
            break;
        }
        let (weak, tagged) = match rest.strip_prefix("W/") {
            Some(tagged) => (true, tagged),
            None => (false, rest),
        };
        let quoted = tagged.strip_prefix('"')?;
        let end = quoted.find('"')?;
        let opaque = &quoted[..end];
        // etagc: %x21 / %x23-7E / obs-text.
        if !opaque.bytes().all(|byte| byte == 0x21 || byte >= 0x23) || opaque.contains('\x7f') {
            return None;
        }
        let revision = match weak {
            true => None,
            false => parse_revision(opaque),
        };
        revisions.push(revision);
        rest = quoted[end + 1..].trim_start_matches(OWS);
        if !rest.is_empty() && !rest.starts_with(',') {
            return None;
        }
    }
    match revisions.is_empty() {
        true => None,
        false => Some(Match::Revisions(revisions)),
    }
}

/// Plain digits within `i64`.
fn parse_revision(text: &str) -> Option<i64> {
    if text.is_empty() || !text.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::{json, Map, Value};
    use zeroize::Zeroizing;

    use crate::api::revision::{parse_if_match, Match, Precondition};
    use crate::api::Req;
    use crate::http::Method;
    use crate::store::changes::Revised;

    fn req(if_match: Option<&str>) -> Req {
        Req::new(Method::Put, "/api/hosts/x", Zeroizing::new(Vec::new()))
            .unwrap()
            .with_if_match(if_match.map(str::to_owned))
    }

    fn body(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    fn holds(if_match: &str, current: i64) -> bool {
        Precondition::of(&req(Some(if_match)))
            .unwrap()
            .check(Revised::Host, current)
            .is_ok()
    }

    #[test]
    fn if_match_of_the_current_revision_holds_and_of_the_one_before_fails() {
        assert!(holds("\"4\"", 4));
        assert!(!holds("\"3\"", 4));
    }

    #[test]
    fn if_match_star_holds_for_any_revision() {
        assert!(holds("*", 1));
        assert!(holds(" * ", 99));
    }

    #[test]
    fn if_match_list_holds_when_any_tag_is_current() {
        assert!(holds("\"1\", \"4\"", 4));
        assert!(holds(" , \"4\" ,", 4));
        assert!(!holds("\"1\",\"2\"", 4));
    }

    #[test]
    fn a_weak_or_non_numeric_tag_never_matches() {
        assert!(!holds("W/\"4\"", 4));
        assert!(!holds("\"four\"", 4));
        assert!(!holds("\"04x\"", 4));
    }

    #[test]
    fn malformed_if_match_is_a_validation_error_naming_the_header() {
        for text in [
            "4",
            "\"4",
            "\"4\" \"5\"",
            "",
            " ",
            "*, \"4\"",
            "W/4",
            "\"a\"b\"",
        ] {
            let err = Precondition::of(&req(Some(text))).unwrap_err();
            assert_eq!(err.code(), "VALIDATION_ERROR", "{text:?}");
            assert!(err.to_string().contains("If-Match"), "{text:?}: {err}");
        }
    }

    #[test]
    fn a_quoted_tag_may_hold_a_comma() {
        assert_eq!(
            parse_if_match("\"a,b\", \"2\""),
            Some(Match::Revisions(vec![None, Some(2)]))
        );
    }

    #[test]
    fn no_precondition_always_holds() {
        let none = Precondition::of(&req(None)).unwrap();
        assert_eq!(none, Precondition::default());
        assert!(none.check(Revised::Group, 7).is_ok());
    }

    #[test]
    fn body_revision_1_is_accepted_and_0_is_rejected() {
        let one = Precondition::with_body(&req(None), &body(json!({"revision": 1}))).unwrap();
        assert!(one.check(Revised::Key, 1).is_ok());
        for bad in [json!(0), json!(-1), json!(1.5), json!("1")] {
            let err =
                Precondition::with_body(&req(None), &body(json!({ "revision": bad }))).unwrap_err();
            assert!(err.to_string().contains("revision"), "{bad}: {err}");
        }
    }

    #[test]
    fn body_revision_null_states_nothing() {
        let none = Precondition::with_body(&req(None), &body(json!({"revision": null}))).unwrap();
        assert!(none.check(Revised::Host, 5).is_ok());
    }

    #[test]
    fn header_and_body_must_both_hold() {
        let both =
            Precondition::with_body(&req(Some("\"2\"")), &body(json!({"revision": 3}))).unwrap();
        assert!(both.check(Revised::Host, 2).is_err());
        assert!(both.check(Revised::Host, 3).is_err());
        let agreeing =
            Precondition::with_body(&req(Some("\"3\"")), &body(json!({"revision": 3}))).unwrap();
        assert!(agreeing.check(Revised::Host, 3).is_ok());
    }

    #[test]
    fn a_failed_check_is_412_naming_the_current_revision() {
        let err = Precondition::of(&req(Some("\"1\"")))
            .unwrap()
            .check(Revised::Group, 2)
            .unwrap_err();
        assert_eq!((err.status(), err.code()), (412, "PRECONDITION_FAILED"));
        assert!(err.to_string().contains("group is at revision 2"), "{err}");
    }
}
