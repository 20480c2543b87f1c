//! Structural defaulting, as the Kubernetes API server applies a CRD schema to an object.
//!
//! kro does no defaulting of its own: the API server does it with the generated CRD. The two
//! passes mirror apiextensions-apiserver: first `null`s of non-nullable fields without a default
//! are dropped (pruned), then defaults are applied top-down. A property's default is applied when
//! the property is absent or `null` (and not nullable); the defaulted value is then walked, so an
//! object defaulted to `{}` receives its own children's defaults (the `default: {}` cascade).

use serde_json::{Map, Value};

/// Apply the defaults of an OpenAPI `schema` to `value` in place.
///
/// Follows the API server: a `default` on a property is applied when the property is absent
/// (or `null` and not `nullable`), and the walk recurses into object properties,
/// `additionalProperties` values and array items. `null`s of non-nullable fields that have no
/// default are removed first, as the API server prunes them before defaulting. As an extension
/// for callers that pass a field directly, a `null` `value` takes the schema's own default.
///
/// ```
/// use serde_json::json;
/// let schema = json!({"type": "object", "properties": {
///     "ingress": {"type": "object", "default": {}, "properties": {
///         "enabled": {"type": "boolean", "default": false}}}}});
/// let mut spec = json!({});
/// kiln_core::schema::apply_defaults(&schema, &mut spec);
/// assert_eq!(spec, json!({"ingress": {"enabled": false}}));
/// ```
pub fn apply_defaults(schema: &Value, value: &mut Value) {
    if let Some(d) = non_nullable_null_default(value, schema) {
        *value = d.clone();
    }
    prune_nulls(schema, value);
    default(schema, value);
}

fn nullable(schema: &Value) -> bool {
    schema.get("nullable").and_then(Value::as_bool) == Some(true)
}

/// The default that replaces `value` if it is a `null` the schema does not allow.
fn non_nullable_null_default<'s>(value: &Value, schema: &'s Value) -> Option<&'s Value> {
    if value.is_null() && !nullable(schema) {
        schema.get("default")
    } else {
        None
    }
}

fn properties(schema: &Value) -> Option<&Map<String, Value>> {
    schema.get("properties").and_then(Value::as_object)
}

/// `additionalProperties` when it is a schema (`true`/`false` carry no defaults).
fn additional(schema: &Value) -> Option<&Value> {
    schema.get("additionalProperties").filter(|s| s.is_object())
}

fn items(schema: &Value) -> Option<&Value> {
    schema.get("items").filter(|s| s.is_object())
}

/// apiextensions' `PruneNonNullableNullsWithoutDefaults`.
fn prune_nulls(schema: &Value, value: &mut Value) {
    match value {
        Value::Object(map) => {
            let props = properties(schema);
            let extra = additional(schema);
            map.retain(|k, v| {
                let field = props.and_then(|p| p.get(k)).or(extra);
                match field {
                    Some(s) => !(v.is_null() && !nullable(s) && s.get("default").is_none()),
                    None => true,
                }
            });
            for (k, v) in map.iter_mut() {
                if let Some(s) = props.and_then(|p| p.get(k)).or(extra) {
                    prune_nulls(s, v);
                }
            }
        }
        Value::Array(list) => {
            if let Some(s) = items(schema) {
                for v in list {
                    prune_nulls(s, v);
                }
            }
        }
        _ => {}
    }
}

/// apiextensions' structural `Default`.
fn default(schema: &Value, value: &mut Value) {
    match value {
        Value::Object(map) => {
            let props = properties(schema);
            if let Some(props) = props {
                for (k, prop) in props {
                    let Some(d) = prop.get("default") else {
                        continue;
                    };
                    let replace = match map.get(k) {
                        None => true,
                        Some(v) => non_nullable_null_default(v, prop).is_some(),
                    };
                    if replace {
                        map.insert(k.clone(), d.clone());
                    }
                }
            }
            let extra = additional(schema);
            for (k, v) in map.iter_mut() {
                if let Some(prop) = props.and_then(|p| p.get(k)) {
                    default(prop, v);
                } else if let Some(s) = extra {
                    // The API server does not walk a value it has just defaulted here.
                    match non_nullable_null_default(v, s) {
                        Some(d) => *v = d.clone(),
                        None => default(s, v),
                    }
                }
            }
        }
        Value::Array(list) => {
            if let Some(s) = items(schema) {
                for v in list {
                    match non_nullable_null_default(v, s) {
                        Some(d) => *v = d.clone(),
                        None => default(s, v),
                    }
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::simple_to_openapi;
    use serde_json::json;

    fn defaulted(simple: Value, types: Option<Value>, mut value: Value) -> Value {
        let schema = simple_to_openapi(&simple, types.as_ref()).unwrap();
        apply_defaults(&schema, &mut value);
        value
    }

    #[test]
    fn absent_properties_take_defaults() {
        let v = defaulted(
            json!({"replicas": "integer | default=1", "name": "string | default=app", "image": "string"}),
            None,
            json!({"image": "nginx"}),
        );
        assert_eq!(v, json!({"image": "nginx", "replicas": 1, "name": "app"}));
    }

    #[test]
    fn present_values_are_kept() {
        let v = defaulted(
            json!({"replicas": "integer | default=1"}),
            None,
            json!({"replicas": 3}),
        );
        assert_eq!(v, json!({"replicas": 3}));
    }

    #[test]
    fn omitted_object_is_filled_by_the_cascade() {
        let simple = json!({
            "name": "string",
            "ingress": {"enabled": "boolean | default=false", "host": "string | default=\"example.com\"",
                        "tls": {"secret": "string | default=tls"}},
        });
        assert_eq!(
            defaulted(simple.clone(), None, json!({"name": "x"})),
            json!({"name": "x", "ingress": {"enabled": false, "host": "example.com", "tls": {"secret": "tls"}}})
        );
        // Partially given objects get the missing children.
        assert_eq!(
            defaulted(simple.clone(), None, json!({"ingress": {"enabled": true}})),
            json!({"ingress": {"enabled": true, "host": "example.com", "tls": {"secret": "tls"}}})
        );
        // A missing spec (null) takes spec's own `default: {}` and then the cascade.
        assert_eq!(
            defaulted(simple, None, Value::Null),
            json!({"ingress": {"enabled": false, "host": "example.com", "tls": {"secret": "tls"}}})
        );
    }

    #[test]
    fn objects_with_required_fields_are_not_created() {
        let v = defaulted(
            json!({"db": {"host": "string | required=true", "port": "integer | default=5432"}}),
            None,
            json!({}),
        );
        assert_eq!(v, json!({}));
        let v = defaulted(
            json!({"db": {"host": "string | required=true", "port": "integer | default=5432"}}),
            None,
            json!({"db": {"host": "h"}}),
        );
        assert_eq!(v, json!({"db": {"host": "h", "port": 5432}}));
    }

    #[test]
    fn array_items_and_map_values_are_defaulted() {
        let simple = json!({"ports": "[]Port", "byName": "map[string]Port"});
        let types = json!({"Port": {"port": "integer | required=true", "protocol": "string | default=TCP"}});
        let v = defaulted(
            simple,
            Some(types),
            json!({"ports": [{"port": 80}, {"port": 53, "protocol": "UDP"}], "byName": {"web": {"port": 8080}}}),
        );
        assert_eq!(
            v,
            json!({"ports": [{"port": 80, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}],
                   "byName": {"web": {"port": 8080, "protocol": "TCP"}}})
        );
    }

    #[test]
    fn json_defaults_for_arrays_and_objects_are_copied() {
        let v = defaulted(
            json!({"tags": "[]string | default=[\"a\", \"b\"]", "extra": "object | default={\"k\": 1}"}),
            None,
            json!({}),
        );
        assert_eq!(v, json!({"tags": ["a", "b"], "extra": {"k": 1}}));
    }

    #[test]
    fn nulls_take_defaults_or_are_pruned() {
        let v = defaulted(
            json!({"replicas": "integer | default=2", "name": "string", "free": "object"}),
            None,
            json!({"replicas": null, "name": null, "free": {"x": null}}),
        );
        // `free` preserves unknown fields: its contents are not the schema's business.
        assert_eq!(v, json!({"replicas": 2, "free": {"x": null}}));
    }

    #[test]
    fn nullable_nulls_are_kept() {
        let schema = json!({"type": "object", "properties": {
            "a": {"type": "string", "nullable": true, "default": "x"}}});
        let mut v = json!({"a": null});
        apply_defaults(&schema, &mut v);
        assert_eq!(v, json!({"a": null}));
    }

    #[test]
    fn null_array_items_take_the_items_default() {
        let schema = json!({"type": "array", "items": {"type": "string", "default": "d"}});
        let mut v = json!(["a", null]);
        apply_defaults(&schema, &mut v);
        assert_eq!(v, json!(["a", "d"]));
    }

    #[test]
    fn values_of_the_wrong_shape_are_left_alone() {
        let schema = simple_to_openapi(
            &json!({"ingress": {"enabled": "boolean | default=false"}}),
            None,
        )
        .unwrap();
        let mut v = json!({"ingress": "not-an-object"});
        apply_defaults(&schema, &mut v);
        assert_eq!(v, json!({"ingress": "not-an-object"}));
        let mut v = json!(42);
        apply_defaults(&schema, &mut v);
        assert_eq!(v, json!(42));
    }
}
