//! kro's CEL function library: kro's own functions (`hash.*`, `json.*`, `random.*`, `merge`,
//! `deepMerge`, `lists.*AtIndex`) and the Kubernetes apiserver libraries kro enables (lists, regex,
//! URLs, quantities, IPs, CIDRs, semver), as far as the `cel` crate can express them.
//!
//! Most functions are closures registered on each [`Context`] ([`register`]); a closure is reached
//! for a name only when no overload of the [`Env`] matches, and the crate refuses a closure whose
//! name the environment already declares. `indexOf` and `lastIndexOf` are such names (the strings
//! extension owns them), so their list forms are typed overloads added by [`extend_env`];
//! `string(ip)` and `string(cidr)` are answered by the metered `string` of `globals`.
//!
//! The string and list functions of the crate's standard library and extensions whose work grows
//! with their input are declared again here, ahead of the crate's ([`declare_first`]: `strings`,
//! `lists`, `globals`), so that each is charged to the evaluation budget (`crate::expr::budget`);
//! the closures are charged for the copies the crate makes of their arguments and results.
//!
//! Values of the Kubernetes types (`net.IP`, `net.CIDR`, `kubernetes.URL`, `kubernetes.Quantity`,
//! `kubernetes.Semver`) are [`cel::objects::Opaque`]; the output converter refuses them, as kro does.
//!
//! Each handler receives the evaluated receiver and arguments as a [`Call`] and checks their shape
//! itself, since the crate has no checker: a call with the wrong types fails with "found no matching
//! overload", as cel-go's checker would have reported it.

use std::sync::Arc;

use cel::common::types::{Type, DYN_TYPE, LIST_TYPE};
use cel::common::value::CowVal;
use cel::objects::{Key, Map, Opaque};
use cel::{Context, Env, ExecutionError, FunctionContext, Value};

use super::budget;

mod cidr;
mod globals;
mod hash;
mod ip;
mod json;
mod lists;
mod maps;
mod quantity;
mod random;
mod regex;
pub mod runtime;
mod semver;
mod strings;
mod url;

pub(crate) use json::base64;

#[cfg(test)]
mod tests;

/// Every function name the library registers, as written in calls: namespaced functions with their
/// namespace (`hash.sha256`), member functions by their bare name (`isSorted`). `indexOf`,
/// `lastIndexOf` and `string` are also declared by the crate; they are listed because the library
/// adds overloads to them.
pub const FUNCTIONS: &[&str] = &[
    // kro
    "hash.fnv64a",
    "hash.sha256",
    "hash.md5",
    "json.unmarshal",
    "json.marshal",
    "random.seededString",
    "random.seededInt",
    "merge",
    "deepMerge",
    "lists.setAtIndex",
    "lists.insertAtIndex",
    "lists.removeAtIndex",
    // Kubernetes lists
    "sum",
    "min",
    "max",
    "isSorted",
    "indexOf",
    "lastIndexOf",
    // Kubernetes regex
    "find",
    "findAll",
    // `matches` with RE2's syntax, what kiln's macros make of both spellings of `matches`.
    "@kiln_matches",
    // Kubernetes URLs
    "url",
    "isURL",
    "getScheme",
    "getHost",
    "getHostname",
    "getPort",
    "getEscapedPath",
    "getQuery",
    // Kubernetes quantities (isLessThan, isGreaterThan and compareTo are shared with semver)
    "quantity",
    "isQuantity",
    "isLessThan",
    "isGreaterThan",
    "compareTo",
    "add",
    "sub",
    "asInteger",
    "asApproximateFloat",
    "isInteger",
    "sign",
    // Kubernetes IPs (`ip` is also `<cidr>.ip()`)
    "ip",
    "isIP",
    "ip.isCanonical",
    "family",
    "isUnspecified",
    "isLoopback",
    "isLinkLocalMulticast",
    "isLinkLocalUnicast",
    "isGlobalUnicast",
    // Kubernetes CIDRs
    "cidr",
    "isCIDR",
    "containsIP",
    "containsCIDR",
    "masked",
    "prefixLength",
    // Kubernetes semver
    "semver",
    "isSemver",
    "major",
    "minor",
    "patch",
    // kro's runtime library (custom status conditions; `runtime` is bound only there)
    "newCondition",
    "condition",
    // overloads added to functions the crate declares
    "string",
];

/// The per-context functions. A name shared by several Kubernetes types (`compareTo` on quantities
/// and semvers, `ip` as a global and on CIDRs) has one handler that dispatches on the receiver.
const HANDLERS: &[(&str, Handler)] = &[
    ("hash.fnv64a", hash::fnv64a),
    ("hash.sha256", hash::sha256),
    ("hash.md5", hash::md5),
    ("json.unmarshal", json::unmarshal),
    ("json.marshal", json::marshal),
    ("random.seededString", random::seeded_string),
    ("random.seededInt", random::seeded_int),
    ("merge", maps::merge),
    ("deepMerge", maps::deep_merge),
    ("lists.setAtIndex", lists::set_at_index),
    ("lists.insertAtIndex", lists::insert_at_index),
    ("lists.removeAtIndex", lists::remove_at_index),
    ("newCondition", runtime::new_condition),
    ("condition", runtime::lookup_condition),
    ("sum", lists::sum),
    ("min", lists::min),
    ("max", lists::max),
    ("isSorted", lists::is_sorted),
    ("find", regex::find),
    ("findAll", regex::find_all),
    ("@kiln_matches", regex::matches),
    ("url", url::url),
    ("isURL", url::is_url),
    ("getScheme", url::get_scheme),
    ("getHost", url::get_host),
    ("getHostname", url::get_hostname),
    ("getPort", url::get_port),
    ("getEscapedPath", url::get_escaped_path),
    ("getQuery", url::get_query),
    ("quantity", quantity::quantity),
    ("isQuantity", quantity::is_quantity),
    ("isLessThan", is_less_than),
    ("isGreaterThan", is_greater_than),
    ("compareTo", compare_to),
    ("add", quantity::add),
    ("sub", quantity::sub),
    ("asInteger", quantity::as_integer),
    ("asApproximateFloat", quantity::as_approximate_float),
    ("isInteger", quantity::is_integer),
    ("sign", quantity::sign),
    ("ip", ip_or_cidr_ip),
    ("isIP", ip::is_ip),
    ("ip.isCanonical", ip::is_canonical),
    ("family", ip::family),
    ("isUnspecified", ip::is_unspecified),
    ("isLoopback", ip::is_loopback),
    ("isLinkLocalMulticast", ip::is_link_local_multicast),
    ("isLinkLocalUnicast", ip::is_link_local_unicast),
    ("isGlobalUnicast", ip::is_global_unicast),
    ("cidr", cidr::cidr),
    ("isCIDR", cidr::is_cidr),
    ("containsIP", cidr::contains_ip),
    ("containsCIDR", cidr::contains_cidr),
    ("masked", cidr::masked),
    ("prefixLength", cidr::prefix_length),
    ("semver", semver::semver),
    ("isSemver", semver::is_semver),
    ("major", semver::major),
    ("minor", semver::minor),
    ("patch", semver::patch),
];

/// Registers the library's functions on an evaluation context (one built on [`extend_env`]'s
/// environment, for the list and `string` overloads).
pub fn register(ctx: &mut Context<'_, '_>) {
    for &(name, handler) in HANDLERS {
        let res = ctx.add_function(name, move |ftx: &FunctionContext| metered(ftx, handler));
        // The names are chosen not to clash with the environment; a clash would only hide this one
        // function, so it is not worth failing every evaluation over outside of tests.
        debug_assert!(res.is_ok(), "{name}: {res:?}");
    }
}

/// Overloads that must come before the crate's own (the first matching overload wins): kiln's
/// metered string and list functions and the crate's global functions it meters (see
/// `strings`, `lists`, `globals`). They take `dyn` where the crate's take concrete types, so
/// they are distinct declarations; declared before the standard library, they come first.
pub fn declare_first(env: &mut Env) {
    strings::declare(env);
    lists::declare(env);
    globals::declare(env);
}

/// Adds the library's typed overloads to an environment: `<list>.indexOf(x)` and
/// `<list>.lastIndexOf(x)` (the strings extension owns the names, so closures cannot be used).
/// `string(<ip>)` and `string(<cidr>)` are `globals`' `string`.
pub fn extend_env(env: &mut Env) {
    let results = [
        env.add_member_overload(
            "indexOf",
            "kiln.list_index_of",
            LIST_TYPE,
            vec![DYN_TYPE],
            lists::index_of_overload,
        ),
        env.add_member_overload(
            "lastIndexOf",
            "kiln.list_last_index_of",
            LIST_TYPE,
            vec![DYN_TYPE],
            lists::last_index_of_overload,
        ),
    ];
    for res in results {
        // Only a second call on the same environment could fail; the overloads are then present.
        debug_assert!(res.is_ok(), "{res:?}");
    }
    // The library's types by name, so `type(cidr(x)) == net.CIDR` works as in Kubernetes.
    for name in TYPE_NAMES {
        let res = env.add_type(Type::new_opaque_type(*name));
        debug_assert!(res.is_ok(), "{name}: {res:?}");
    }
}

/// The CEL type names of the library's values.
pub const TYPE_NAMES: &[&str] = &[
    ip::TYPE_NAME,
    cidr::TYPE_NAME,
    quantity::TYPE_NAME,
    semver::TYPE_NAME,
    url::TYPE_NAME,
];

/// A library function: what it does with an evaluated call.
pub(crate) type Handler = fn(&Call<'_>) -> Result<Value, ExecutionError>;

/// [`invoke`], [`charged`].
fn metered(ftx: &FunctionContext<'_, '_>, handler: Handler) -> Result<Value, ExecutionError> {
    charged(ftx, || invoke(ftx, handler))
}

/// A context function's call `run`, charging the evaluation budget for what it copies: its
/// arguments, which the crate hands a context function as copies, and its result, which it copies
/// back and which must be within the size limit. What a handler builds on the way it bounds
/// itself (see `findAll`, `json.unmarshal`). Every context function goes through here: kiln's
/// library and the component front-end's helpers (`crate::component::functions`).
pub(crate) fn charged(
    ftx: &FunctionContext<'_, '_>,
    run: impl FnOnce() -> Result<Value, ExecutionError>,
) -> Result<Value, ExecutionError> {
    if !budget::metered() {
        return run();
    }
    let what = ftx.name;
    if let Some(t) = &ftx.this {
        budget::charge_val(what, t.as_ref())?;
    }
    for a in &ftx.args {
        budget::charge_val(what, a.as_ref())?;
    }
    let out = run()?;
    budget::admit_value(what, &out)?;
    Ok(out)
}

pub(crate) fn invoke(
    ftx: &FunctionContext<'_, '_>,
    handler: Handler,
) -> Result<Value, ExecutionError> {
    let this = match &ftx.this {
        Some(t) => Some(Value::try_from(t.as_ref())?),
        None => None,
    };
    let args = ftx
        .args
        .iter()
        .map(|a| Value::try_from(a.as_ref()))
        .collect::<Result<Vec<_>, _>>()?;
    handler(&Call {
        name: ftx.name,
        this,
        args,
    })
}

/// An evaluated call of a library function.
pub(crate) struct Call<'a> {
    /// The function's name, for error messages.
    pub name: &'a str,
    /// The receiver of a member call (`x` in `x.f(y)`), `None` for a global call.
    pub this: Option<Value>,
    /// The arguments, receiver excluded.
    pub args: Vec<Value>,
}

impl Call<'_> {
    /// A failure of this function, with kro's or Kubernetes' message.
    pub fn error(&self, msg: impl ToString) -> ExecutionError {
        ExecutionError::function_error(self.name, msg)
    }

    /// The "found no matching overload" error for the argument types of this call.
    pub fn no_overload(&self) -> ExecutionError {
        match &self.this {
            Some(t) => ExecutionError::no_such_member_overload(
                self.name,
                std::iter::once(t)
                    .chain(&self.args)
                    .map(type_name)
                    .collect(),
            ),
            None => ExecutionError::no_such_overload(
                self.name,
                self.args.iter().map(type_name).collect(),
            ),
        }
    }

    /// The arguments of a global call with `N` of them.
    pub fn global<const N: usize>(&self) -> Result<&[Value; N], ExecutionError> {
        if self.this.is_some() {
            return Err(self.no_overload());
        }
        self.args
            .as_slice()
            .try_into()
            .map_err(|_| self.no_overload())
    }

    /// The receiver and arguments of a member call with `N` arguments.
    pub fn member<const N: usize>(&self) -> Result<(&Value, &[Value; N]), ExecutionError> {
        let this = self.this.as_ref().ok_or_else(|| self.no_overload())?;
        let args = self
            .args
            .as_slice()
            .try_into()
            .map_err(|_| self.no_overload())?;
        Ok((this, args))
    }

    /// The string a value holds, or the overload error.
    pub fn string<'v>(&self, v: &'v Value) -> Result<&'v str, ExecutionError> {
        match v {
            Value::String(s) => Ok(s.as_str()),
            _ => Err(self.no_overload()),
        }
    }

    /// The int a value holds, or the overload error.
    pub fn int(&self, v: &Value) -> Result<i64, ExecutionError> {
        match v {
            Value::Int(i) => Ok(*i),
            _ => Err(self.no_overload()),
        }
    }

    /// The list a value holds, or the overload error.
    pub fn list<'v>(&self, v: &'v Value) -> Result<&'v Arc<Vec<Value>>, ExecutionError> {
        match v {
            Value::List(l) => Ok(l),
            _ => Err(self.no_overload()),
        }
    }

    /// The opaque value of type `T` a value holds, or the overload error.
    pub fn opaque<'v, T: Opaque>(&self, v: &'v Value) -> Result<&'v T, ExecutionError> {
        as_opaque(v).ok_or_else(|| self.no_overload())
    }

    /// The opaque value of type `T` held by the receiver of a member call without arguments.
    pub fn this_opaque<T: Opaque>(&self) -> Result<&T, ExecutionError> {
        let (this, []) = self.member::<0>()?;
        self.opaque(this)
    }
}

/// The opaque value of type `T` a value holds.
pub(crate) fn as_opaque<T: Opaque>(v: &Value) -> Option<&T> {
    match v {
        Value::Opaque(o) => o.downcast_ref::<T>(),
        _ => None,
    }
}

/// A CEL string value.
pub(crate) fn string_value(s: impl Into<String>) -> Value {
    Value::String(Arc::new(s.into()))
}

/// A CEL list value.
pub(crate) fn list_value(items: Vec<Value>) -> Value {
    Value::List(Arc::new(items))
}

/// A CEL map value with string keys.
pub(crate) fn map_value(entries: impl IntoIterator<Item = (String, Value)>) -> Value {
    Value::Map(Map {
        map: Arc::new(
            entries
                .into_iter()
                .map(|(k, v)| (Key::String(Arc::new(k)), v))
                .collect(),
        ),
    })
}

/// The CEL name of a value's type, as cel-go spells it in overload errors.
pub(crate) fn type_name(v: &Value) -> String {
    match v {
        Value::List(_) => "list".into(),
        Value::Map(_) => "map".into(),
        Value::Function(..) => "function".into(),
        Value::Int(_) => "int".into(),
        Value::UInt(_) => "uint".into(),
        Value::Float(_) => "double".into(),
        Value::String(_) => "string".into(),
        Value::Bytes(_) => "bytes".into(),
        Value::Bool(_) => "bool".into(),
        Value::Duration(_) => "google.protobuf.Duration".into(),
        Value::Timestamp(_) => "google.protobuf.Timestamp".into(),
        Value::Opaque(o) => o.runtime_type_name().to_string(),
        Value::Struct(_) => "struct".into(),
        Value::Null => "null_type".into(),
    }
}

/// Converts a library result into what a typed overload returns.
pub(crate) fn to_cow<'b, 'v>(v: Value) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let boxed: Box<dyn cel::common::value::Val> = v.try_into()?;
    Ok(CowVal::Owned(boxed))
}

/// `isLessThan` on quantities and semvers.
fn is_less_than(call: &Call<'_>) -> Result<Value, ExecutionError> {
    Ok(Value::Bool(compare(call)? < 0))
}

/// `isGreaterThan` on quantities and semvers.
fn is_greater_than(call: &Call<'_>) -> Result<Value, ExecutionError> {
    Ok(Value::Bool(compare(call)? > 0))
}

/// `compareTo` on quantities and semvers: -1, 0 or 1.
fn compare_to(call: &Call<'_>) -> Result<Value, ExecutionError> {
    Ok(Value::Int(compare(call)?))
}

fn compare(call: &Call<'_>) -> Result<i64, ExecutionError> {
    let (this, [other]) = call.member::<1>()?;
    let ord = if let (Some(a), Some(b)) = (
        as_opaque::<quantity::Quantity>(this),
        as_opaque::<quantity::Quantity>(other),
    ) {
        a.cmp_value(b)
    } else if let (Some(a), Some(b)) = (
        as_opaque::<semver::Semver>(this),
        as_opaque::<semver::Semver>(other),
    ) {
        a.compare(b)
    } else {
        return Err(call.no_overload());
    };
    Ok(ord as i64)
}

/// `ip(string)` parses an address; `<cidr>.ip()` is the CIDR's address.
fn ip_or_cidr_ip(call: &Call<'_>) -> Result<Value, ExecutionError> {
    if call.this.is_some() {
        cidr::ip(call)
    } else {
        ip::ip(call)
    }
}
