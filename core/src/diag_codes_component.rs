// Codes of the component-type front-end (KLN6xxx; see docs/errors.md).
code_table! { COMPONENT;
}
