//! The rules of identities' bodies, each on both sides of its edge.

#![allow(clippy::unwrap_used)]

use serde_json::{json, Map, Value};

use crate::model::identity::{Answer, IdentityFields, IdentityPatch, Method, SecretsGiven, Slot};
use crate::model::totp::{Algorithm, UriSettings};
use crate::model::validate::Invalid;

fn object(value: Value) -> Map<String, Value> {
    value.as_object().unwrap().clone()
}

fn create_with(body: Value, given: &SecretsGiven) -> Result<IdentityFields, Invalid> {
    IdentityPatch::from_json(&object(body), given)?.create()
}

fn create(body: Value) -> Result<IdentityFields, Invalid> {
    create_with(body, &SecretsGiven::default())
}

fn update(
    current: &IdentityFields,
    body: Value,
    given: &SecretsGiven,
) -> Result<IdentityFields, Invalid> {
    IdentityPatch::from_json(&object(body), given)?.apply(Some(current))
}

fn field_of(result: Result<IdentityFields, Invalid>) -> String {
    result.unwrap_err().field
}

fn password_given(index: usize) -> SecretsGiven {
    let mut given = SecretsGiven::default();
    given.passwords.insert(index, true);
    given
}

fn totp_given(uri: Option<UriSettings>) -> SecretsGiven {
    SecretsGiven {
        totp_secret: Some(uri),
        ..SecretsGiven::default()
    }
}

#[test]
fn a_name_of_one_to_a_hundred_characters_after_trimming_is_taken_and_outside_refused() {
    assert_eq!(create(json!({"name": "  a  "})).unwrap().name.as_str(), "a");
    assert!(create(json!({"name": "x".repeat(100)})).is_ok());
    assert_eq!(field_of(create(json!({"name": "x".repeat(101)}))), "name");
    assert_eq!(field_of(create(json!({"name": "   "}))), "name");
    assert_eq!(field_of(create(json!({}))), "name");
}

#[test]
fn a_username_is_null_or_one_to_a_hundred_characters() {
    assert_eq!(
        create(json!({"name": "n", "username": null}))
            .unwrap()
            .username,
        None
    );
    let long = "u".repeat(100);
    let fields = create(json!({"name": "n", "username": long})).unwrap();
    assert_eq!(fields.username.as_deref(), Some(long.as_str()));
    assert_eq!(
        field_of(create(json!({"name": "n", "username": "u".repeat(101)}))),
        "username"
    );
    assert_eq!(
        field_of(create(json!({"name": "n", "username": ""}))),
        "username"
    );
    assert_eq!(
        field_of(create(json!({"name": "n", "username": "-oProxy"}))),
        "username"
    );
}

#[test]
fn eight_methods_are_taken_and_nine_refused() {
    let keys = |count: usize| -> Vec<Value> {
        (0..count)
            .map(|n| json!({"type": "key", "key_id": format!("k{n}")}))
            .collect()
    };
    assert_eq!(
        create(json!({"name": "n", "auth": keys(8)}))
            .unwrap()
            .auth
            .len(),
        8
    );
    assert_eq!(
        field_of(create(json!({"name": "n", "auth": keys(9)}))),
        "auth"
    );
    assert_eq!(
        create(json!({"name": "n", "auth": []})).unwrap().auth,
        Vec::new()
    );
}

#[test]
fn a_kind_repeated_is_refused_but_two_different_keys_are_taken() {
    for kind in ["password", "agent", "keyboard_interactive"] {
        let body =
            json!({"name": "n", "auth": [{"type": kind}, {"type": "agent"}, {"type": kind}]});
        let err = create(body).unwrap_err();
        assert!(err.field.starts_with("auth["), "{kind}: {err}");
    }
    let two = json!({"name": "n", "auth": [{"type": "key", "key_id": "a"}, {"type": "key", "key_id": "b"}]});
    assert_eq!(create(two).unwrap().auth.len(), 2);
    let same = json!({"name": "n", "auth": [{"type": "key", "key_id": "a"}, {"type": "key", "key_id": "a"}]});
    assert_eq!(field_of(create(same)), "auth[1]");
}

#[test]
fn an_unknown_method_type_or_a_key_without_id_is_refused_naming_the_field() {
    let body = json!({"name": "n", "auth": [{"type": "agent"}, {"type": "kerberos"}]});
    assert_eq!(field_of(create(body)), "auth[1].type");
    let body = json!({"name": "n", "auth": [{"type": "key", "key_id": ""}]});
    assert_eq!(field_of(create(body)), "auth[0].key_id");
    let body = json!({"name": "n", "auth": [{"type": "key"}]});
    assert_eq!(field_of(create(body)), "auth[0].key_id");
}

fn answers(count: usize) -> Value {
    let rules: Vec<Value> = (0..count)
        .map(|n| json!({"prompt": format!("^Q{n}:"), "answer": {"type": "password"}}))
        .collect();
    json!({"name": "n", "auth": [{"type": "password"}, {"type": "keyboard_interactive", "answers": rules}]})
}

#[test]
fn sixteen_answer_rules_are_taken_and_seventeen_refused() {
    let fields = create(answers(16)).unwrap();
    assert!(
        matches!(&fields.auth[1], Method::KeyboardInteractive { answers } if answers.len() == 16)
    );
    assert_eq!(field_of(create(answers(17))), "auth[1].answers");
}

#[test]
fn a_prompt_is_checked_as_a_portable_pattern_naming_its_place() {
    let body = |prompt: &str| {
        json!({"name": "n", "auth": [{"type": "password"}, {"type": "keyboard_interactive",
            "answers": [{"prompt": prompt, "answer": {"type": "password"}}]}]})
    };
    assert!(create(body("(?i)password:")).is_ok());
    // Lookbehind means different things, or nothing, in common engines.
    assert_eq!(
        field_of(create(body("(?<=x)y"))),
        "auth[1].answers[0].prompt"
    );
}

#[test]
fn a_password_answer_needs_a_password_method() {
    let body = json!({"name": "n", "auth": [{"type": "keyboard_interactive",
        "answers": [{"prompt": "x", "answer": {"type": "password"}}]}]});
    assert_eq!(field_of(create(body)), "auth[0].answers[0].answer");
    assert!(create(answers(1)).is_ok());
}

#[test]
fn a_totp_answer_needs_totp() {
    let body = |totp: Value| {
        json!({"name": "n", "totp": totp, "auth": [{"type": "keyboard_interactive",
            "answers": [{"prompt": "code", "answer": {"type": "totp"}}]}]})
    };
    assert_eq!(
        field_of(create(body(Value::Null))),
        "auth[0].answers[0].answer"
    );
    assert!(create_with(body(json!({})), &totp_given(None)).is_ok());
}

#[test]
fn a_literal_answer_needs_its_text_on_create() {
    let body = json!({"name": "n", "auth": [{"type": "keyboard_interactive",
        "answers": [{"prompt": "x", "answer": {"type": "literal"}}]}]});
    assert_eq!(
        field_of(create(body.clone())),
        "auth[0].answers[0].answer.literal"
    );
    let mut given = SecretsGiven::default();
    given.literals.insert((0, 0));
    let fields = create_with(body, &given).unwrap();
    let Method::KeyboardInteractive { answers } = &fields.auth[0] else {
        panic!()
    };
    assert_eq!(answers[0].answer, Answer::Literal(Slot::New));
}

#[test]
fn a_secret_given_to_the_wrong_method_is_refused() {
    let body = json!({"name": "n", "auth": [{"type": "agent"}]});
    assert_eq!(
        field_of(create_with(body, &password_given(0))),
        "auth[0].password"
    );
    let mut given = SecretsGiven::default();
    given.literals.insert((0, 0));
    let body = json!({"name": "n", "auth": [{"type": "password"}, {"type": "keyboard_interactive",
        "answers": [{"prompt": "x", "answer": {"type": "password"}}]}]});
    assert!(create_with(body.clone(), &given).is_err());
    given.literals = [(1, 0)].into();
    assert_eq!(
        field_of(create_with(body, &given)),
        "auth[1].answers[0].answer.literal"
    );
}

#[test]
fn totp_digits_six_to_eight_are_taken_and_five_or_nine_refused() {
    for digits in [6, 8] {
        let fields = create_with(
            json!({"name": "n", "totp": {"digits": digits}}),
            &totp_given(None),
        );
        assert_eq!(fields.unwrap().totp.unwrap().settings.digits(), digits);
    }
    for digits in [json!(5), json!(9), json!("6"), json!(6.5)] {
        let result = create_with(
            json!({"name": "n", "totp": {"digits": digits}}),
            &totp_given(None),
        );
        assert_eq!(field_of(result), "totp.digits");
    }
}

#[test]
fn totp_period_within_the_modules_bounds_is_taken_and_outside_refused() {
    use crate::model::totp::{MAX_PERIOD_S, MIN_PERIOD_S};
    for period in [MIN_PERIOD_S, MAX_PERIOD_S] {
        let body = json!({"name": "n", "totp": {"period": period}});
        let fields = create_with(body, &totp_given(None)).unwrap();
        assert_eq!(fields.totp.unwrap().settings.period(), period);
    }
    for period in [u64::from(MIN_PERIOD_S) - 1, u64::from(MAX_PERIOD_S) + 1] {
        let body = json!({"name": "n", "totp": {"period": period}});
        assert_eq!(
            field_of(create_with(body, &totp_given(None))),
            "totp.period"
        );
    }
}

#[test]
fn totp_without_a_secret_on_create_is_refused_and_defaults_fill_what_is_left_out() {
    assert_eq!(
        field_of(create(json!({"name": "n", "totp": {"digits": 6}}))),
        "totp.secret"
    );
    let fields = create_with(json!({"name": "n", "totp": {}}), &totp_given(None)).unwrap();
    let settings = fields.totp.unwrap().settings;
    let defaults = (6, 30, Algorithm::Sha1);
    assert_eq!(
        (settings.digits(), settings.period(), settings.algorithm()),
        defaults
    );
}

#[test]
fn a_uris_settings_fill_what_the_body_leaves_out_and_a_contradiction_is_refused() {
    let uri = UriSettings {
        digits: Some(8),
        period: Some(60),
        algorithm: Some(Algorithm::Sha256),
        ..UriSettings::default()
    };
    let given = totp_given(Some(uri));
    let fields = create_with(json!({"name": "n", "totp": {"digits": 8}}), &given).unwrap();
    let settings = fields.totp.unwrap().settings;
    assert_eq!(
        (settings.digits(), settings.period(), settings.algorithm()),
        (8, 60, Algorithm::Sha256)
    );
    let contradicting = json!({"name": "n", "totp": {"digits": 7}});
    assert_eq!(field_of(create_with(contradicting, &given)), "totp.digits");
    let contradicting = json!({"name": "n", "totp": {"algorithm": "SHA1"}});
    assert_eq!(
        field_of(create_with(contradicting, &given)),
        "totp.algorithm"
    );
}

fn stored() -> IdentityFields {
    let mut given = password_given(0);
    given.literals.insert((1, 0));
    given.totp_secret = Some(None);
    let body = json!({"name": "n", "username": "u", "totp": {"digits": 7},
        "auth": [{"type": "password"}, {"type": "keyboard_interactive", "answers": [
            {"prompt": "^Site:", "answer": {"type": "literal"}},
            {"prompt": "code", "answer": {"type": "totp"}}]}]});
    let mut fields = create_with(body, &given).unwrap();
    // As read back from the store: every given secret is stored.
    fields.auth = vec![
        Method::Password {
            password: Slot::Stored,
        },
        Method::KeyboardInteractive {
            answers: match &fields.auth[1] {
                Method::KeyboardInteractive { answers } => answers
                    .iter()
                    .map(|rule| match rule.answer {
                        Answer::Literal(_) => crate::model::identity::Rule {
                            answer: Answer::Literal(Slot::Stored),
                            ..rule.clone()
                        },
                        _ => rule.clone(),
                    })
                    .collect(),
                _ => unreachable!(),
            },
        },
    ];
    if let Some(totp) = fields.totp.as_mut() {
        totp.secret = Slot::Stored;
    }
    fields
}

#[test]
fn an_update_without_a_password_keeps_the_stored_one_and_null_clears_it() {
    let current = stored();
    let kept = update(
        &current,
        json!({"auth": [{"type": "password"}]}),
        &SecretsGiven::default(),
    );
    assert_eq!(
        kept.unwrap().auth,
        vec![Method::Password {
            password: Slot::Stored
        }]
    );
    let mut cleared = SecretsGiven::default();
    cleared.passwords.insert(0, false);
    let fields = update(&current, json!({"auth": [{"type": "password"}]}), &cleared).unwrap();
    assert_eq!(
        fields.auth,
        vec![Method::Password {
            password: Slot::Empty
        }]
    );
}

#[test]
fn an_update_without_a_literal_keeps_it_only_where_a_literal_rule_was() {
    let current = stored();
    let rules = |first: &str, second: &str| {
        json!({"auth": [{"type": "password"}, {"type": "keyboard_interactive", "answers": [
            {"prompt": first, "answer": {"type": "literal"}},
            {"prompt": second, "answer": {"type": "totp"}}]}]})
    };
    let fields = update(&current, rules("^Other:", "code"), &SecretsGiven::default()).unwrap();
    let Method::KeyboardInteractive { answers } = &fields.auth[1] else {
        panic!()
    };
    assert_eq!(answers[0].answer, Answer::Literal(Slot::Stored));
    // Position 1 held a totp rule: a literal there has nothing to keep.
    let swapped = json!({"auth": [{"type": "password"}, {"type": "keyboard_interactive", "answers": [
        {"prompt": "code", "answer": {"type": "totp"}},
        {"prompt": "^Site:", "answer": {"type": "literal"}}]}]});
    let result = update(&current, swapped, &SecretsGiven::default());
    assert_eq!(field_of(result), "auth[1].answers[1].answer.literal");
}

#[test]
fn an_update_of_totp_without_a_secret_keeps_the_secret_and_the_settings_it_leaves_out() {
    let current = stored();
    let fields = update(
        &current,
        json!({"totp": {"period": 60}}),
        &SecretsGiven::default(),
    )
    .unwrap();
    let totp = fields.totp.unwrap();
    assert_eq!(totp.secret, Slot::Stored);
    assert_eq!((totp.settings.digits(), totp.settings.period()), (7, 60));
}

#[test]
fn removing_totp_while_an_answer_uses_it_is_refused() {
    let result = update(&stored(), json!({"totp": null}), &SecretsGiven::default());
    assert_eq!(field_of(result), "auth[1].answers[1].answer");
}

#[test]
fn only_username_auth_and_totp_changes_count_as_credential_changes() {
    let current = stored();
    let none = SecretsGiven::default();
    let renamed = update(&current, json!({"name": "m", "notes": "x"}), &none).unwrap();
    assert!(!current.credentials_differ(&renamed));
    assert_eq!(current.changed_fields(&renamed), ["name", "notes"]);
    let user = update(&current, json!({"username": "v"}), &none).unwrap();
    assert!(current.credentials_differ(&user));
    let same_auth = json!({"auth": [{"type": "password"}, {"type": "keyboard_interactive", "answers": [
        {"prompt": "^Site:", "answer": {"type": "literal"}},
        {"prompt": "code", "answer": {"type": "totp"}}]}]});
    let unchanged = update(&current, same_auth, &none).unwrap();
    assert!(
        !current.credentials_differ(&unchanged),
        "kept secrets are no change"
    );
    let new_password = update(
        &current,
        json!({"auth": [{"type": "password"}]}),
        &password_given(0),
    );
    assert!(current.credentials_differ(&new_password.unwrap()));
}

#[test]
fn the_view_says_which_secrets_are_stored_and_never_holds_one() {
    let identity = crate::model::identity::Identity {
        id: "i".into(),
        fields: stored(),
        created_at: "t".into(),
        updated_at: "t".into(),
        revision: 1,
    };
    let view = serde_json::to_value(identity.view()).unwrap();
    assert_eq!(
        view["auth"][0],
        json!({"type": "password", "has_password": true})
    );
    assert_eq!(
        view["auth"][1]["answers"][0]["answer"],
        json!({"type": "literal", "has_literal": true})
    );
    assert_eq!(
        view["totp"],
        json!({"digits": 7, "period": 30, "algorithm": "SHA1", "has_secret": true})
    );
}
