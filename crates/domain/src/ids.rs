//! Ids as types: a branch id cannot be passed where a service id is expected. Each is a
//! string on the wire and in the database (`#[serde(transparent)]`, a plain `string` schema);
//! the store converts at its boundary. No `Deref<Target = String>`: that would let one id pass
//! for another again through `&str`. `Default` is the empty id, which no row has (it lets
//! request structs keep `..Default::default()`).

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(
            Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord,
            serde::Serialize, serde::Deserialize, utoipa::ToSchema,
        )]
        #[serde(transparent)]
        #[schema(value_type = String)]
        pub struct $name(String);

        impl $name {
            pub fn new(id: impl Into<String>) -> Self {
                $name(id.into())
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }

            pub fn into_string(self) -> String {
                self.0
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl From<String> for $name {
            fn from(id: String) -> Self {
                $name(id)
            }
        }

        impl From<&str> for $name {
            fn from(id: &str) -> Self {
                $name(id.to_string())
            }
        }

        impl From<&$name> for $name {
            fn from(id: &$name) -> Self {
                id.clone()
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> Self {
                id.0
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }
    };
}

id_type!(
    /// A service (an application owning branches and the service-wide quota).
    ServiceId
);
id_type!(
    /// A branch of a service (what an API key authenticates).
    BranchId
);
id_type!(
    /// An asynchronous verification job.
    JobId
);
id_type!(
    /// A batch of asynchronous jobs submitted together.
    BatchId
);
id_type!(
    /// A user (a person or company owning services).
    UserId
);
id_type!(
    /// A partner (a reseller or POS vendor using the partner API).
    PartnerId
);
id_type!(
    /// A package (a quota per billing cycle for a duration, at a price).
    PackageId
);
id_type!(
    /// A receiving bank account registered by a branch.
    BankAccountId
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_plain_strings_on_the_wire() {
        let id = ServiceId::from("svc_1");
        assert_eq!(serde_json::to_string(&id).unwrap(), r#""svc_1""#);
        let back: ServiceId = serde_json::from_str(r#""svc_1""#).unwrap();
        assert_eq!(back, id);
        assert_eq!(id.to_string(), "svc_1");
        assert_eq!(id.as_str(), "svc_1");
    }

    #[test]
    fn the_schema_is_a_string() {
        use utoipa::PartialSchema;
        let schema = serde_json::to_value(BranchId::schema()).unwrap();
        assert_eq!(schema["type"], "string");
    }
}
