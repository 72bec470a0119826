//! Types as far as the analyses need them: sizes of elements.

use serde::Serialize;

/// Scalar C/CUDA types with a known size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[allow(missing_docs)]
pub enum ScalarType {
    Bool,
    Char,
    Short,
    Int,
    Long,
    LongLong,
    Half,
    Float,
    Double,
}

impl ScalarType {
    /// Size in bytes (LP64, as nvcc on Linux).
    pub fn bytes(self) -> u64 {
        match self {
            ScalarType::Bool | ScalarType::Char => 1,
            ScalarType::Short | ScalarType::Half => 2,
            ScalarType::Int | ScalarType::Float => 4,
            ScalarType::Long | ScalarType::LongLong | ScalarType::Double => 8,
        }
    }

    /// Whether values of this type are integers (or booleans).
    pub fn is_integral(self) -> bool {
        !matches!(
            self,
            ScalarType::Half | ScalarType::Float | ScalarType::Double
        )
    }
}

/// A (simplified) C++ type.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum Type {
    /// `void`
    Void,
    /// A scalar.
    Scalar(ScalarType),
    /// A named aggregate with known size (CUDA vector types such as `float4`,
    /// or a struct defined in the scanned sources).
    Record {
        /// Type name.
        name: String,
        /// Size in bytes.
        bytes: u64,
        /// Fields: (name, offset, size), when known.
        fields: Vec<(String, u64, u64)>,
    },
    /// Pointer to a type.
    Pointer(Box<Type>),
    /// Array of a type with optional extent.
    Array(Box<Type>, Option<u64>),
    /// A template type parameter of the enclosing function.
    TemplateParam(String),
    /// A type the front end cannot size (class from an unseen header, `auto`).
    Named(String),
}

impl Type {
    /// Size in bytes, when known.
    pub fn bytes(&self) -> Option<u64> {
        match self {
            Type::Void => None,
            Type::Scalar(s) => Some(s.bytes()),
            Type::Record { bytes, .. } => Some(*bytes),
            Type::Pointer(_) => Some(8),
            Type::Array(t, Some(n)) => t.bytes().map(|b| b * n),
            Type::Array(_, None) => None,
            Type::TemplateParam(_) | Type::Named(_) => None,
        }
    }

    /// Alignment in bytes, when known.
    pub fn align(&self) -> Option<u64> {
        match self {
            Type::Scalar(s) => Some(s.bytes()),
            Type::Record {
                name,
                bytes,
                fields,
            } => {
                if let Some(a) = vector_align(name, *bytes) {
                    return Some(a);
                }
                fields.iter().map(|f| f.2.min(8)).max().or(Some(1))
            }
            Type::Pointer(_) => Some(8),
            Type::Array(t, _) => t.align(),
            _ => None,
        }
    }

    /// For pointers and arrays, the element type.
    pub fn element(&self) -> Option<&Type> {
        match self {
            Type::Pointer(t) | Type::Array(t, _) => Some(t),
            _ => None,
        }
    }

    /// Whether this is a pointer or array.
    pub fn is_indexable(&self) -> bool {
        matches!(self, Type::Pointer(_) | Type::Array(..))
    }

    /// Extents of a (nested) array type, outermost first.
    pub fn array_dims(&self) -> Vec<Option<u64>> {
        let mut dims = Vec::new();
        let mut t = self;
        while let Type::Array(inner, n) = t {
            dims.push(*n);
            t = inner;
        }
        dims
    }

    /// The innermost non-array type.
    pub fn innermost(&self) -> &Type {
        let mut t = self;
        while let Type::Array(inner, _) = t {
            t = inner;
        }
        t
    }

    /// Field (offset, size) of a record type.
    pub fn field(&self, name: &str) -> Option<(u64, u64)> {
        match self {
            Type::Record { fields, .. } => fields.iter().find(|f| f.0 == name).map(|f| (f.1, f.2)),
            _ => None,
        }
    }

    /// Short human-readable rendering, e.g. `float*`.
    pub fn render(&self) -> String {
        match self {
            Type::Void => "void".into(),
            Type::Scalar(s) => format!("{s:?}").to_lowercase(),
            Type::Record { name, .. } => name.clone(),
            Type::Pointer(t) => format!("{}*", t.render()),
            Type::Array(t, Some(n)) => format!("{}[{n}]", t.render()),
            Type::Array(t, None) => format!("{}[]", t.render()),
            Type::TemplateParam(n) | Type::Named(n) => n.clone(),
        }
    }
}

/// Alignment of CUDA built-in vector types (`float4` is 16-byte aligned,
/// `float3` only 4).
fn vector_align(name: &str, bytes: u64) -> Option<u64> {
    let last = name.chars().last()?;
    let lanes = last.to_digit(10)? as u64;
    if !(1..=4).contains(&lanes) {
        return None;
    }
    if lanes == 3 {
        Some(bytes / 3)
    } else {
        Some(bytes)
    }
}

/// CUDA built-in vector types and other well-known fixed-size types.
pub fn builtin_record(name: &str) -> Option<Type> {
    let (base, lanes) = match name.char_indices().last() {
        Some((i, c)) if c.is_ascii_digit() => (&name[..i], c.to_digit(10)? as u64),
        _ => {
            return match name {
                "__half" | "half" | "__nv_bfloat16" | "nv_bfloat16" => {
                    Some(Type::Scalar(ScalarType::Half))
                }
                "__half2" | "half2" | "__nv_bfloat162" | "nv_bfloat162" => Some(record(name, 2, 2)),
                _ => None,
            };
        }
    };
    if !(1..=4).contains(&lanes) {
        return None;
    }
    let elem = match base {
        "char" | "uchar" => 1,
        "short" | "ushort" => 2,
        "int" | "uint" | "float" => 4,
        "long" | "ulong" | "longlong" | "ulonglong" | "double" => 8,
        _ => return None,
    };
    Some(record(name, elem, lanes))
}

fn record(name: &str, elem: u64, lanes: u64) -> Type {
    const LANE: [&str; 4] = ["x", "y", "z", "w"];
    Type::Record {
        name: name.to_string(),
        bytes: elem * lanes,
        fields: (0..lanes)
            .map(|i| (LANE[i as usize].to_string(), i * elem, elem))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vector_types_have_cuda_sizes() {
        assert_eq!(builtin_record("float4").unwrap().bytes(), Some(16));
        assert_eq!(builtin_record("float3").unwrap().bytes(), Some(12));
        assert_eq!(builtin_record("float3").unwrap().align(), Some(4));
        assert_eq!(builtin_record("double2").unwrap().bytes(), Some(16));
        assert_eq!(builtin_record("uchar4").unwrap().bytes(), Some(4));
        assert_eq!(builtin_record("float4").unwrap().field("z"), Some((8, 4)));
        assert!(builtin_record("float5").is_none());
        assert!(builtin_record("matrix").is_none());
    }

    #[test]
    fn array_dims_outermost_first() {
        let t = Type::Array(
            Box::new(Type::Array(
                Box::new(Type::Scalar(ScalarType::Float)),
                Some(33),
            )),
            Some(32),
        );
        assert_eq!(t.array_dims(), vec![Some(32), Some(33)]);
        assert_eq!(t.bytes(), Some(32 * 33 * 4));
    }
}
