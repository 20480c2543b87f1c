//! The `cel` crate's global functions whose work or result grows with their argument
//! (conversions from strings and byte strings, `base64.*`, `lists.range`,
//! `math.greatest`/`least` over a list), declared again ahead of the crate's: each charges the
//! evaluation budget for what it reads and copies, checks the size of what it will build, then
//! calls the crate's own implementation, which answers. The crate's overloads are found in an
//! environment of the crate's alone ([`crate_env`]): in kiln's, the first matching overload is
//! the one declared here. (`optional.of`, declared on `dyn` by the crate, cannot be declared
//! again: `super::super::meter` charges its argument instead.)

use std::sync::OnceLock;

use cel::common::types::{CelBool, CelBytes, CelInt, CelString, CelUInt, Kind, DYN_TYPE};
use cel::common::value::CowVal;
use cel::{Env, ExecutionError};

use super::{as_opaque, cidr, ip, string_value, to_cow};
use crate::expr::budget::{admit, charge, charge_val};
use crate::expr::weight::Weight;

/// What a function costs, beyond the call.
#[derive(Clone, Copy)]
enum Rule {
    /// Parses its string argument (`int('42')`): reads it once.
    Parse,
    /// Reads or copies its argument (`math.greatest(list)`).
    Copy,
    /// `string(x)`: a byte string is checked and copied; a string is passed through.
    ToString,
    /// `bytes(x)`: a string is copied.
    ToBytes,
    /// `base64.encode(b)`: four bytes for three.
    Encode,
    /// `base64.decode(s)`: at most three bytes for four.
    Decode,
    /// `lists.range(n)`: a list of `n` ints.
    Range,
}

/// `(name, arguments, rule)` of each function declared here.
const FUNCTIONS: &[(&str, usize, Rule)] = &[
    ("string", 1, Rule::ToString),
    ("bytes", 1, Rule::ToBytes),
    ("int", 1, Rule::Parse),
    ("uint", 1, Rule::Parse),
    ("double", 1, Rule::Parse),
    ("bool", 1, Rule::Parse),
    ("duration", 1, Rule::Parse),
    ("timestamp", 1, Rule::Parse),
    ("base64.encode", 1, Rule::Encode),
    ("base64.decode", 1, Rule::Decode),
    ("lists.range", 1, Rule::Range),
    // `math.greatest(list)` and `math.least(list)`, what the math extension's macros expand to.
    ("math.@max", 1, Rule::Copy),
    ("math.@min", 1, Rule::Copy),
];

/// One function pointer per entry of [`FUNCTIONS`] (overloads are plain `fn`s).
fn metered<'b, 'v, const I: usize>(
    a: Vec<CowVal<'b, 'v>>,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (name, _, rule) = FUNCTIONS[I];
    call(name, rule, a)
}

/// Declares the functions; must run before the crate's standard library is added.
pub(super) fn declare(env: &mut Env) {
    type F = cel::common::functions::Function;
    let pointers: [F; 13] = [
        metered::<0>,
        metered::<1>,
        metered::<2>,
        metered::<3>,
        metered::<4>,
        metered::<5>,
        metered::<6>,
        metered::<7>,
        metered::<8>,
        metered::<9>,
        metered::<10>,
        metered::<11>,
        metered::<12>,
    ];
    debug_assert_eq!(pointers.len(), FUNCTIONS.len());
    for (&(name, arity, _), f) in FUNCTIONS.iter().zip(pointers) {
        let res = env.add_overload(
            name,
            &format!("kiln.metered.{name}"),
            (0..arity).map(|_| DYN_TYPE).collect(),
            f,
        );
        debug_assert!(res.is_ok(), "{name}: {res:?}");
    }
}

/// What the crate answers for the calls templates make most (`string(1)`, `string(s)`,
/// `int(i)`), done here so that most renders never build [`crate_env`].
fn common_case<'b, 'v>(
    name: &str,
    a: &mut Vec<CowVal<'b, 'v>>,
) -> Option<Result<CowVal<'b, 'v>, ExecutionError>> {
    let [x] = a.as_slice() else { return None };
    let kind = x.get_type().kind();
    let same = matches!(
        (name, kind),
        ("string", Kind::String)
            | ("int", Kind::Int)
            | ("uint", Kind::UInt)
            | ("double", Kind::Double)
            | ("bool", Kind::Boolean)
    );
    if same {
        // The value itself, moved, as the crate's conversion to its own type does.
        return a.pop().map(Ok);
    }
    if name != "string" {
        return None;
    }
    // The crate writes these with their `Display`.
    let text = match kind {
        Kind::Int => x.downcast_ref::<CelInt>()?.to_string(),
        Kind::UInt => x.downcast_ref::<CelUInt>()?.to_string(),
        Kind::Boolean => x.downcast_ref::<CelBool>()?.to_string(),
        _ => return None,
    };
    Some(Ok(CowVal::owned(CelString::from(text))))
}

/// The crate's environment, without kiln's declarations: where the crate's implementations are
/// found.
fn crate_env() -> &'static Env {
    static ENV: OnceLock<Env> = OnceLock::new();
    ENV.get_or_init(|| {
        let mut env = Env::default().with_stdlib();
        for ext in [
            cel::extensions::strings as fn(&mut Env) -> _,
            cel::extensions::lists,
            cel::extensions::math,
            cel::extensions::encoders,
        ] {
            env.add_extension(ext).expect("extension registers once");
        }
        env
    })
}

fn call<'b, 'v>(
    name: &str,
    rule: Rule,
    a: Vec<CowVal<'b, 'v>>,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let mut a = a;
    if let Some(v) = common_case(name, &mut a) {
        return v;
    }
    let what = format!("{name}()");
    let string = a
        .first()
        .and_then(|x| x.downcast_ref::<CelString>())
        .map(|s| s.inner().len());
    let bytes = a
        .first()
        .and_then(|x| x.downcast_ref::<CelBytes>())
        .map(|b| b.inner().len());
    let building = |kind: Kind, w: Weight| admit(&what, kind, w, kind != Kind::List, true);
    match rule {
        Rule::Parse => {
            if let Some(n) = string {
                charge(&what, Weight::bytes(n).work())?;
            }
        }
        Rule::Copy => {
            for x in &a {
                charge_val(&what, x.as_ref())?;
            }
        }
        Rule::ToString => {
            if let Some(n) = bytes {
                building(Kind::String, Weight::bytes(n))?;
            }
            // kiln's IP and CIDR values, which the crate does not know.
            if let [x] = a.as_slice() {
                let opaque = x.get_type().kind() == Kind::Opaque;
                if let Some(v) = opaque
                    .then(|| cel::Value::try_from(x.as_ref()).ok())
                    .flatten()
                {
                    if let Some(i) = as_opaque::<ip::Ip>(&v) {
                        return to_cow(string_value(i.to_string()));
                    }
                    if let Some(c) = as_opaque::<cidr::Cidr>(&v) {
                        return to_cow(string_value(c.to_string()));
                    }
                }
            }
        }
        Rule::ToBytes => {
            if let Some(n) = string {
                building(Kind::Bytes, Weight::bytes(n))?;
            }
        }
        Rule::Encode => {
            if let Some(n) = bytes {
                building(Kind::String, Weight::bytes(n.div_ceil(3).saturating_mul(4)))?;
            }
        }
        Rule::Decode => {
            if let Some(n) = string {
                building(Kind::Bytes, Weight::bytes(n.div_ceil(4).saturating_mul(3)))?;
            }
        }
        Rule::Range => {
            // The crate refuses more than a million; a smaller list is checked here.
            if let Some(n) = a.first().and_then(|x| x.downcast_ref::<CelInt>()) {
                if let Ok(n) = usize::try_from(*n.inner()) {
                    if n <= 1_000_000 {
                        building(
                            Kind::List,
                            Weight {
                                bytes: 0,
                                entries: n,
                            },
                        )?;
                    }
                }
            }
        }
    }
    match crate_env().find_overload(name, &a) {
        Some(f) => f(a),
        None => Err(ExecutionError::no_such_overload(
            name,
            a.iter().map(|x| x.get_type().name().to_string()).collect(),
        )),
    }
}
