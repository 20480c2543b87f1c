//! Structural defaulting, as the Kubernetes API server applies a CRD schema to an object.
//!
//! kro does no defaulting of its own: the API server does it with the generated CRD. The two
//! passes mirror apiextensions-apiserver: first `null`s of non-nullable fields without a default
//! are dropped (pruned), then defaults are applied top-down. A property's default is applied when
//! the property is absent or `null` (and not nullable); the defaulted value is then walked, so an
//! object defaulted to `{}` receives its own children's defaults (the `default: {}` cascade).

use std::collections::HashMap;

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

/// A schema reduced to what [`apply_defaults`] reads, built once and applied to many values.
///
/// `apply_defaults` looks up `properties`, `default`, `nullable`, `additionalProperties` and
/// `items` in the schema's JSON maps at every node of every value; an RGD's instances all share
/// one schema, and those lookups were most of the cost of preparing an instance. The plan holds
/// the same facts in plain fields. [`DefaultsPlan::apply`] gives exactly what `apply_defaults`
/// gives (a property test compares the two on generated schemas and values).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DefaultsPlan {
    root: Node,
}

/// Up to this many properties are found by scanning; more get a hash index.
const SCAN_LIMIT: usize = 12;

#[derive(Debug, Clone, Default, PartialEq)]
struct Node {
    nullable: bool,
    default: Option<Value>,
    /// `properties`, when it is a map, in schema order (defaults are inserted in that order).
    properties: Option<Vec<(String, Node)>>,
    /// Positions in `properties` by name, for schemas with many properties.
    index: Option<HashMap<String, usize, foldhash::fast::FixedState>>,
    /// `additionalProperties` when it is a schema.
    additional: Option<Box<Node>>,
    /// `items` when it is a schema.
    items: Option<Box<Node>>,
}

impl Node {
    fn of(schema: &Value) -> Node {
        let properties: Option<Vec<(String, Node)>> =
            properties(schema).map(|p| p.iter().map(|(k, s)| (k.clone(), Node::of(s))).collect());
        let index = properties
            .as_ref()
            .filter(|p| p.len() > SCAN_LIMIT)
            .map(|p| {
                p.iter()
                    .enumerate()
                    .map(|(i, (k, _))| (k.clone(), i))
                    .collect()
            });
        Node {
            nullable: nullable(schema),
            default: schema.get("default").cloned(),
            properties,
            index,
            additional: additional(schema).map(|s| Box::new(Node::of(s))),
            items: items(schema).map(|s| Box::new(Node::of(s))),
        }
    }

    /// The schema of property `key`: its own, else `additionalProperties`.
    fn field(&self, key: &str) -> Option<&Node> {
        self.property(key).or(self.additional.as_deref())
    }

    fn property(&self, key: &str) -> Option<&Node> {
        let props = self.properties.as_ref()?;
        match &self.index {
            Some(index) => index.get(key).map(|&i| &props[i].1),
            None => props.iter().find(|(k, _)| k == key).map(|(_, n)| n),
        }
    }

    /// The default that replaces `value` if it is a `null` this schema does not allow.
    fn null_default(&self, value: &Value) -> Option<&Value> {
        if value.is_null() && !self.nullable {
            self.default.as_ref()
        } else {
            None
        }
    }

    /// Nothing below can change: no properties, no additional properties, no items.
    fn is_leaf(&self) -> bool {
        self.properties.is_none() && self.additional.is_none() && self.items.is_none()
    }

    fn prune_nulls(&self, value: &mut Value) {
        if self.is_leaf() {
            return;
        }
        match value {
            Value::Object(map) => {
                map.retain(|k, v| match self.field(k) {
                    Some(s) => !(v.is_null() && !s.nullable && s.default.is_none()),
                    None => true,
                });
                for (k, v) in map.iter_mut() {
                    if let Some(s) = self.field(k) {
                        s.prune_nulls(v);
                    }
                }
            }
            Value::Array(list) => {
                if let Some(s) = &self.items {
                    for v in list {
                        s.prune_nulls(v);
                    }
                }
            }
            _ => {}
        }
    }

    fn default(&self, value: &mut Value) {
        if self.is_leaf() {
            return;
        }
        match value {
            Value::Object(map) => {
                if let Some(props) = &self.properties {
                    for (k, prop) in props {
                        let Some(d) = &prop.default else {
                            continue;
                        };
                        let replace = match crate::lookup::get(map, k) {
                            None => true,
                            Some(v) => prop.null_default(v).is_some(),
                        };
                        if replace {
                            map.insert(k.clone(), d.clone());
                        }
                    }
                }
                for (k, v) in map.iter_mut() {
                    if let Some(prop) = self.property(k) {
                        prop.default(v);
                    } else if let Some(s) = &self.additional {
                        // The API server does not walk a value it has just defaulted here.
                        match s.null_default(v) {
                            Some(d) => *v = d.clone(),
                            None => s.default(v),
                        }
                    }
                }
            }
            Value::Array(list) => {
                if let Some(s) = &self.items {
                    for v in list {
                        match s.null_default(v) {
                            Some(d) => *v = d.clone(),
                            None => s.default(v),
                        }
                    }
                }
            }
            _ => {}
        }
    }
}

impl DefaultsPlan {
    /// The plan of an OpenAPI schema.
    pub fn new(schema: &Value) -> Self {
        DefaultsPlan {
            root: Node::of(schema),
        }
    }

    /// [`apply_defaults`] with this plan's schema.
    pub fn apply(&self, value: &mut Value) {
        if let Some(d) = self.root.null_default(value) {
            *value = d.clone();
        }
        self.root.prune_nulls(value);
        self.root.default(value);
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

    mod plan {
        use super::super::*;
        use proptest::prelude::*;
        use serde_json::{json, Map, Value};

        /// Property names: a few that values share with schemas, and sometimes many, so that
        /// both the scanned and the indexed lookups are exercised.
        fn key() -> impl Strategy<Value = String> {
            prop_oneof![
                4 => prop::sample::select(vec!["a", "b", "c"]).prop_map(String::from),
                1 => (0..20u8).prop_map(|i| format!("k{i}")),
            ]
        }

        fn value() -> impl Strategy<Value = Value> {
            let leaf = prop_oneof![
                3 => Just(Value::Null),
                1 => any::<bool>().prop_map(Value::from),
                1 => (0..5i64).prop_map(Value::from),
                1 => Just(json!("s")),
            ];
            leaf.prop_recursive(4, 40, 6, |inner| {
                prop_oneof![
                    prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                    prop::collection::vec((key(), inner), 0..6)
                        .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
                ]
            })
        }

        /// Schemas with every keyword defaulting reads, in valid and invalid shapes.
        fn schema() -> impl Strategy<Value = Value> {
            let leaf = prop_oneof![
                4 => Just(json!({})),
                1 => Just(json!(true)),
                1 => Just(json!("not a schema")),
            ];
            leaf.prop_recursive(4, 48, 8, |inner| {
                (
                    prop::option::of(prop_oneof![
                        4 => prop::collection::vec((key(), inner.clone()), 0..16)
                            .prop_map(|kv| Value::Object(kv.into_iter().collect())),
                        1 => Just(json!(["not", "a", "map"])),
                    ]),
                    prop::option::of(prop_oneof![
                        inner.clone(),
                        any::<bool>().prop_map(Value::from)
                    ]),
                    prop::option::of(inner),
                    prop::option::of(value()),
                    prop::option::of(prop_oneof![
                        any::<bool>().prop_map(Value::from),
                        Just(json!("yes"))
                    ]),
                )
                    .prop_map(|(props, extra, items, default, nullable)| {
                        let mut m = Map::new();
                        m.insert("type".into(), json!("object"));
                        let mut put = |k: &str, v: Option<Value>| {
                            if let Some(v) = v {
                                m.insert(k.into(), v);
                            }
                        };
                        put("properties", props);
                        put("additionalProperties", extra);
                        put("items", items);
                        put("default", default);
                        put("nullable", nullable);
                        Value::Object(m)
                    })
            })
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(2000))]

            /// The plan defaults exactly as the schema walk does.
            #[test]
            fn plan_defaults_as_the_schema_walk_does(s in schema(), v in value()) {
                let mut walked = v.clone();
                apply_defaults(&s, &mut walked);
                let mut planned = v;
                DefaultsPlan::new(&s).apply(&mut planned);
                // Compare with key order: defaults are inserted in schema order.
                prop_assert_eq!(
                    serde_json::to_string(&planned).unwrap(),
                    serde_json::to_string(&walked).unwrap()
                );
            }
        }

        #[test]
        fn many_properties_are_found_through_the_index() {
            let props: Map<String, Value> = (0..30)
                .map(|i| (format!("p{i}"), json!({"default": i})))
                .collect();
            let schema = json!({"type": "object", "properties": props});
            let mut v = json!({"p29": null, "p3": 7});
            DefaultsPlan::new(&schema).apply(&mut v);
            let mut walked = json!({"p29": null, "p3": 7});
            apply_defaults(&schema, &mut walked);
            assert_eq!(v, walked);
            assert_eq!(v["p29"], json!(29));
            assert_eq!(v["p3"], json!(7));
            assert_eq!(v.as_object().unwrap().len(), 30);
        }
    }
}
