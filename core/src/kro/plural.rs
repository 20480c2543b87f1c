//! The plural of an instance kind, as kro computes it: `flect.Pluralize(strings.ToLower(kind))`.
//!
//! kro names the instance CRD `<plural>.<group>` with the plural from the Go library flect. kiln must
//! produce the same plural, or `kiln schema` would print a CRD whose name differs from the one kro
//! creates. The algorithm below is flect's: acronyms get `s` (`es` after an s); a word that already is
//! a known plural stays; known irregular words are looked up; otherwise the first matching suffix rule
//! in flect's order applies; a word ending in `s` stays; else `s` is appended. The word lists are
//! flect's data (English plurals).

/// Known irregular singular → plural pairs.
const IRREGULAR: &[(&str, &str)] = &[
    ("human", "humans"),
    ("matrix", "matrices"),
    ("vertix", "vertices"),
    ("index", "indices"),
    ("mouse", "mice"),
    ("louse", "lice"),
    ("ress", "resses"),
    ("ox", "oxen"),
    ("quiz", "quizzes"),
    ("series", "series"),
    ("octopus", "octopi"),
    ("equipment", "equipment"),
    ("information", "information"),
    ("rice", "rice"),
    ("money", "money"),
    ("species", "species"),
    ("fish", "fish"),
    ("sheep", "sheep"),
    ("jeans", "jeans"),
    ("police", "police"),
    ("dear", "dear"),
    ("goose", "geese"),
    ("tooth", "teeth"),
    ("foot", "feet"),
    ("bus", "buses"),
    ("fez", "fezzes"),
    ("piano", "pianos"),
    ("halo", "halos"),
    ("photo", "photos"),
    ("aircraft", "aircraft"),
    ("alumna", "alumnae"),
    ("alumnus", "alumni"),
    ("analysis", "analyses"),
    ("antenna", "antennas"),
    ("antithesis", "antitheses"),
    ("apex", "apexes"),
    ("appendix", "appendices"),
    ("axis", "axes"),
    ("bacillus", "bacilli"),
    ("bacterium", "bacteria"),
    ("basis", "bases"),
    ("beau", "beaus"),
    ("bison", "bison"),
    ("bureau", "bureaus"),
    ("campus", "campuses"),
    ("château", "châteaux"),
    ("codex", "codices"),
    ("concerto", "concertos"),
    ("corpus", "corpora"),
    ("crisis", "crises"),
    ("curriculum", "curriculums"),
    ("deer", "deer"),
    ("diagnosis", "diagnoses"),
    ("die", "dice"),
    ("dwarf", "dwarves"),
    ("ellipsis", "ellipses"),
    ("erratum", "errata"),
    ("faux pas", "faux pas"),
    ("focus", "foci"),
    ("formula", "formulas"),
    ("fungus", "fungi"),
    ("genus", "genera"),
    ("graffito", "graffiti"),
    ("grouse", "grouse"),
    ("half", "halves"),
    ("hoof", "hooves"),
    ("hypothesis", "hypotheses"),
    ("larva", "larvae"),
    ("libretto", "librettos"),
    ("loaf", "loaves"),
    ("locus", "loci"),
    ("minutia", "minutiae"),
    ("moose", "moose"),
    ("nebula", "nebulae"),
    ("nucleus", "nuclei"),
    ("oasis", "oases"),
    ("offspring", "offspring"),
    ("opus", "opera"),
    ("parenthesis", "parentheses"),
    ("phenomenon", "phenomena"),
    ("phylum", "phyla"),
    ("prognosis", "prognoses"),
    ("radius", "radiuses"),
    ("referendum", "referendums"),
    ("salmon", "salmon"),
    ("shrimp", "shrimp"),
    ("stimulus", "stimuli"),
    ("stratum", "strata"),
    ("swine", "swine"),
    ("syllabus", "syllabi"),
    ("symposium", "symposiums"),
    ("synopsis", "synopses"),
    ("tableau", "tableaus"),
    ("thesis", "theses"),
    ("thief", "thieves"),
    ("trout", "trout"),
    ("tuna", "tuna"),
    ("vertebra", "vertebrae"),
    ("vita", "vitae"),
    ("vortex", "vortices"),
    ("wharf", "wharves"),
    ("wife", "wives"),
    ("wolf", "wolves"),
    ("datum", "data"),
    ("testis", "testes"),
    ("alias", "aliases"),
    ("shoe", "shoes"),
    ("news", "news"),
    ("ovum", "ova"),
    ("foo", "foos"),
];

/// Suffix rules, in flect's order: the first suffix that matches is replaced. Each rule's plural
/// suffix also maps to itself, so a plural is left alone; [`plural`] checks that first.
const SUFFIX_RULES: &[(&str, &str)] = &[
    ("campus", "campuses"),
    ("man", "men"),
    ("tz", "tzes"),
    ("alias", "aliases"),
    ("oasis", "oasis"),
    ("wife", "wives"),
    ("basis", "basis"),
    ("atum", "ata"),
    ("adium", "adia"),
    ("actus", "acti"),
    ("irus", "iri"),
    ("iterion", "iteria"),
    ("dium", "diums"),
    ("ovum", "ova"),
    ("ize", "izes"),
    ("dge", "dges"),
    ("focus", "foci"),
    ("child", "children"),
    ("oaf", "oaves"),
    ("randum", "randa"),
    ("base", "bases"),
    ("atus", "atuses"),
    ("ode", "odes"),
    ("person", "people"),
    ("hello", "hellos"),
    ("va", "vae"),
    ("leus", "li"),
    ("oot", "eet"),
    ("oose", "eese"),
    ("box", "boxes"),
    ("ium", "ia"),
    ("sis", "ses"),
    ("nna", "nnas"),
    ("eses", "esis"),
    ("stis", "stes"),
    ("ex", "ices"),
    ("ula", "ulae"),
    ("isis", "ises"),
    ("use", "uses"),
    ("lf", "lves"),
    ("rf", "rves"),
    ("afe", "aves"),
    ("bfe", "bves"),
    ("cfe", "cves"),
    ("dfe", "dves"),
    ("efe", "eves"),
    ("ffe", "fves"),
    ("gfe", "gves"),
    ("hfe", "hves"),
    ("ife", "ives"),
    ("jfe", "jves"),
    ("kfe", "kves"),
    ("lfe", "lves"),
    ("mfe", "mves"),
    ("nfe", "nves"),
    ("ofe", "oves"),
    ("pfe", "pves"),
    ("qfe", "qves"),
    ("rfe", "rves"),
    ("sfe", "sves"),
    ("tfe", "tves"),
    ("ufe", "uves"),
    ("vfe", "vves"),
    ("wfe", "wves"),
    ("xfe", "xves"),
    ("yfe", "yves"),
    ("zfe", "zves"),
    ("hive", "hives"),
    ("quy", "quies"),
    ("by", "bies"),
    ("cy", "cies"),
    ("dy", "dies"),
    ("fy", "fies"),
    ("gy", "gies"),
    ("hy", "hies"),
    ("jy", "jies"),
    ("ky", "kies"),
    ("ly", "lies"),
    ("my", "mies"),
    ("ny", "nies"),
    ("py", "pies"),
    ("qy", "qies"),
    ("ry", "ries"),
    ("sy", "sies"),
    ("ty", "ties"),
    ("vy", "vies"),
    ("wy", "wies"),
    ("xy", "xies"),
    ("zy", "zies"),
    ("x", "xes"),
    ("ch", "ches"),
    ("ss", "sses"),
    ("sh", "shes"),
    ("oe", "oes"),
    ("io", "ios"),
    ("o", "oes"),
];

/// Acronyms (upper case) that pluralise by appending `s`.
const ACRONYMS: &[&str] = &[
    "OK", "UTF8", "HTML", "JSON", "JWT", "ID", "UUID", "SQL", "ACK", "ACL", "ADSL", "AES", "ANSI",
    "API", "ARP", "ATM", "BGP", "BSS", "CCITT", "CHAP", "CIDR", "CIR", "CLI", "CPE", "CPU", "CRC",
    "CRT", "CSMA", "CMOS", "DCE", "DEC", "DES", "DHCP", "DNS", "DRAM", "DSL", "DSLAM", "DTE",
    "DMI", "EHA", "EIA", "EIGRP", "EOF", "ESS", "FCC", "FCS", "FDDI", "FTP", "GBIC", "GEPOF",
    "HDLC", "HTTP", "HTTPS", "IANA", "ICMP", "IDF", "IDS", "IEEE", "IETF", "IMAP", "IP", "IPS",
    "ISDN", "ISP", "LACP", "LAN", "LAPB", "LAPF", "LLC", "MAC", "MC", "MDF", "MIB", "MPLS", "MTU",
    "NAC", "NAT", "NBMA", "NIC", "NRZ", "NRZI", "NVRAM", "OIDC", "OSI", "OSPF", "OUI", "PAP",
    "PAT", "PC", "PIM", "PCM", "PDU", "POP3", "POTS", "PPP", "PPTP", "PTT", "PVST", "RAM", "RARP",
    "RFC", "RIP", "RLL", "ROM", "RSTP", "RTP", "RCP", "SDLC", "SFD", "SFP", "SLARP", "SLIP",
    "SMTP", "SNA", "SNAP", "SNMP", "SOF", "SRAM", "SSH", "SSID", "STP", "SYN", "TDM", "TFTP",
    "TIA", "TOFU", "UDP", "URL", "URI", "USB", "UTP", "VC", "VLAN", "VLSM", "VPN", "W3C", "WAN",
    "WEP", "WPA", "WWW",
];

/// The plural of a lower-case kind.
pub fn plural(kind_lower: &str) -> String {
    let s = kind_lower;
    if s.is_empty() {
        return String::new();
    }
    if ACRONYMS.contains(&s.to_uppercase().as_str()) {
        return if s.ends_with('s') || s.ends_with('S') {
            format!("{s}es")
        } else {
            format!("{s}s")
        };
    }
    if IRREGULAR.iter().any(|(_, p)| *p == s) {
        return s.to_string();
    }
    if let Some((_, p)) = IRREGULAR.iter().find(|(w, _)| *w == s) {
        return (*p).to_string();
    }
    // flect registers each rule twice: singular suffix → plural suffix, then plural suffix → itself.
    for (suffix, repl) in SUFFIX_RULES {
        if let Some(stem) = s.strip_suffix(suffix) {
            return format!("{stem}{repl}");
        }
        if s.ends_with(repl) {
            return s.to_string();
        }
    }
    if s.ends_with('s') {
        return s.to_string();
    }
    format!("{s}s")
}

#[cfg(test)]
mod tests {
    use super::plural;

    #[test]
    fn like_flect() {
        for (k, p) in [
            ("webapp", "webapps"),
            ("application", "applications"),
            ("policy", "policies"),
            ("ingress", "ingresses"),
            ("status", "statuses"),
            ("database", "databases"),
            ("index", "indices"),
            ("person", "people"),
            ("box", "boxes"),
            ("key", "keys"),
            ("api", "apis"),
            ("dns", "dnses"),
            ("datum", "data"),
            ("cluster", "clusters"),
            ("postgrescluster", "postgresclusters"),
            ("monitoredservice", "monitoredservices"),
            ("echo", "echoes"),
            ("radio", "radios"),
            ("leaf", "leafs"),
            ("shelf", "shelves"),
            ("replicas", "replicas"),
        ] {
            assert_eq!(plural(k), p, "{k}");
        }
    }
}
