// Codes of the kurel package front-end (KLN7xxx; see docs/errors.md).
code_table! { KUREL;
}
