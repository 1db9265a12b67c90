//! A small element tree over `quick_xml`'s pull reader, for the XML sources (SecureCRT's
//! export, mRemoteNG's `confCons.xml`): each element with its name as written (prefix
//! included), its attributes unescaped, its children in order and its text (character data
//! and CDATA, unescaped, concatenated).
//!
//! Invariants: no entity is ever expanded beyond XML's five predefined ones and character
//! references (a DOCTYPE declaring entities is refused outright, so no "billion laughs");
//! nesting is capped at `MAX_DEPTH` and the element count at `MAX_ELEMENTS`, so memory and
//! work are bounded by the input's length; the tree is built without recursion; a reason
//! never quotes the document (only byte offsets and fixed words).

use quick_xml::escape::resolve_predefined_entity;
use quick_xml::events::{BytesRef, BytesStart, Event};
use quick_xml::Reader;

/// The deepest nesting accepted (the root is depth 1).
pub const MAX_DEPTH: usize = 64;
/// The most elements one document may hold.
pub const MAX_ELEMENTS: usize = 1_000_000;

/// One element of the tree. Its `Debug` shows names and counts only: attribute values and
/// text may be other tools' protected passwords.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Element {
    /// The name as written, with its prefix (`mrng:Connections`).
    pub name: String,
    /// Attributes in document order, values unescaped.
    pub attributes: Vec<(String, String)>,
    pub children: Vec<Element>,
    /// The character data directly inside this element, unescaped (whitespace kept).
    pub text: String,
}

impl Element {
    /// The name without its namespace prefix (`Connections` for `mrng:Connections`).
    pub fn local_name(&self) -> &str {
        local(&self.name)
    }

    /// The value of the attribute `name` (compared without prefix), if present.
    pub fn attribute(&self, name: &str) -> Option<&str> {
        self.attributes
            .iter()
            .find(|(key, _)| local(key) == name)
            .map(|(_, value)| value.as_str())
    }

    /// The children whose local name is `name`, in order.
    pub fn children_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Element> {
        self.children
            .iter()
            .filter(move |child| child.local_name() == name)
    }
}

impl std::fmt::Debug for Element {
    fn fmt(&self, out: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self
            .attributes
            .iter()
            .map(|(key, _)| key.as_str())
            .collect();
        write!(
            out,
            "Element({}, attributes {names:?}, {} children, {} bytes of text)",
            self.name,
            self.children.len(),
            self.text.len()
        )
    }
}

fn local(name: &str) -> &str {
    name.rsplit_once(':').map_or(name, |(_, rest)| rest)
}

/// Parses `text` (a leading byte-order mark is skipped) into its root element.
pub fn parse(text: &str) -> Result<Element, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut reader = Reader::from_str(text);
    let mut builder = Builder::default();
    loop {
        let position = reader.buffer_position();
        let event = reader
            .read_event()
            .map_err(|_| format!("not well-formed XML (near byte {position})"))?;
        match event {
            Event::Start(start) => builder.open(&start, false)?,
            Event::Empty(start) => builder.open(&start, true)?,
            Event::End(_) => builder.close()?,
            Event::Text(data) => {
                let data = data.xml_content().map_err(|_| undecodable(position))?;
                builder.text(&data)?;
            }
            Event::CData(data) => {
                let data = data.decode().map_err(|_| undecodable(position))?;
                builder.text(&data)?;
            }
            Event::GeneralRef(reference) => builder.text(&resolve(&reference, position)?)?,
            Event::DocType(doctype) => {
                if doctype.windows(8).any(|window| window == b"<!ENTITY") {
                    return Err("a DOCTYPE that declares entities is refused".to_string());
                }
            }
            Event::Decl(_) | Event::PI(_) | Event::Comment(_) => {}
            Event::Eof => return builder.finish(),
        }
    }
}

fn undecodable(position: u64) -> String {
    format!("undecodable text (near byte {position})")
}

/// `&lt;` and the other predefined entities, and character references; nothing else.
fn resolve(reference: &BytesRef<'_>, position: u64) -> Result<String, String> {
    let unknown = || format!("an unknown entity reference (near byte {position})");
    if reference.is_char_ref() {
        return match reference.resolve_char_ref() {
            Ok(Some(character)) => Ok(character.to_string()),
            _ => Err(format!(
                "a broken character reference (near byte {position})"
            )),
        };
    }
    let name = reference.decode().map_err(|_| unknown())?;
    resolve_predefined_entity(&name)
        .map(str::to_string)
        .ok_or_else(unknown)
}

/// The open elements, innermost last, and the finished root.
#[derive(Default)]
struct Builder {
    open: Vec<Element>,
    root: Option<Element>,
    elements: usize,
}

impl Builder {
    fn open(&mut self, start: &BytesStart<'_>, empty: bool) -> Result<(), String> {
        if self.open.len() >= MAX_DEPTH {
            return Err(format!("elements nest deeper than {MAX_DEPTH} levels"));
        }
        self.elements += 1;
        if self.elements > MAX_ELEMENTS {
            return Err(format!("more than {MAX_ELEMENTS} elements"));
        }
        if self.open.is_empty() && self.root.is_some() {
            return Err("more than one root element".to_string());
        }
        let mut element = Element {
            name: String::from_utf8_lossy(start.name().as_ref()).into_owned(),
            ..Element::default()
        };
        for attribute in start.attributes() {
            let attribute = attribute.map_err(|_| "a malformed attribute".to_string())?;
            let value = attribute
                .unescape_value()
                .map_err(|_| "an attribute value with an unknown entity reference".to_string())?;
            let key = String::from_utf8_lossy(attribute.key.as_ref()).into_owned();
            element.attributes.push((key, value.into_owned()));
        }
        self.open.push(element);
        if empty {
            self.close()?;
        }
        Ok(())
    }

    fn close(&mut self) -> Result<(), String> {
        let element = self
            .open
            .pop()
            .ok_or_else(|| "an end tag without a start tag".to_string())?;
        match self.open.last_mut() {
            Some(parent) => parent.children.push(element),
            None => self.root = Some(element),
        }
        Ok(())
    }

    fn text(&mut self, data: &str) -> Result<(), String> {
        match self.open.last_mut() {
            Some(element) => element.text.push_str(data),
            None if data.trim().is_empty() => {}
            None => return Err("text outside the root element".to_string()),
        }
        Ok(())
    }

    fn finish(self) -> Result<Element, String> {
        if !self.open.is_empty() {
            return Err("the document ends inside an element".to_string());
        }
        self.root.ok_or_else(|| "no root element".to_string())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::panic;

    use super::*;

    #[test]
    fn parse_builds_the_tree_with_attributes_text_and_children_in_order() {
        let root = parse(
            "\u{feff}<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!-- c -->\
             <mrng:Connections xmlns:mrng=\"http://mremoteng.org\" Name=\"A &amp; B\">\
             <Node Name=\"one\"/><Node Name=\"two\">x &lt; y<![CDATA[ <raw> ]]>&#65;&#x42;</Node>\
             </mrng:Connections>\n",
        )
        .unwrap();
        assert_eq!(root.name, "mrng:Connections");
        assert_eq!(root.local_name(), "Connections");
        assert_eq!(root.attribute("Name"), Some("A & B"));
        assert_eq!(root.attribute("mrng"), Some("http://mremoteng.org"));
        let names: Vec<_> = root
            .children_named("Node")
            .map(|node| node.attribute("Name").unwrap())
            .collect();
        assert_eq!(names, ["one", "two"]);
        assert_eq!(root.children[1].text, "x < y <raw> AB");
    }

    #[test]
    fn debug_output_names_attributes_but_never_shows_their_values_or_the_text() {
        let root = parse("<a Password=\"c2VjcmV0\"><b/>secret text</a>").unwrap();
        let shown = format!("{root:?}");
        assert_eq!(
            shown,
            "Element(a, attributes [\"Password\"], 1 children, 11 bytes of text)"
        );
    }

    #[test]
    fn parse_refuses_a_doctype_with_entity_declarations_but_not_a_plain_one() {
        let bomb = "<!DOCTYPE lolz [<!ENTITY lol \"lol\"><!ENTITY lol2 \"&lol;&lol;\">]>\
                    <lolz>&lol2;</lolz>";
        assert_eq!(
            parse(bomb).unwrap_err(),
            "a DOCTYPE that declares entities is refused"
        );
        assert_eq!(
            parse("<!DOCTYPE VanDyke><VanDyke/>").unwrap().name,
            "VanDyke"
        );
    }

    #[test]
    fn parse_refuses_unknown_entities_in_text_and_attributes() {
        assert!(parse("<a>&nbsp;</a>")
            .unwrap_err()
            .contains("unknown entity"));
        assert!(parse("<a b=\"&secret;\"/>")
            .unwrap_err()
            .contains("unknown entity"));
        assert!(parse("<a>&#0;</a>")
            .unwrap_err()
            .contains("character reference"));
    }

    #[test]
    fn parse_accepts_64_levels_and_refuses_65() {
        let nested = |depth: usize| "<a>".repeat(depth) + &"</a>".repeat(depth);
        assert!(parse(&nested(MAX_DEPTH)).is_ok());
        assert_eq!(
            parse(&nested(MAX_DEPTH + 1)).unwrap_err(),
            "elements nest deeper than 64 levels"
        );
    }

    #[test]
    fn parse_accepts_a_million_elements_and_refuses_one_more() {
        let document = |elements: usize| format!("<r>{}</r>", "<a/>".repeat(elements - 1));
        assert_eq!(
            parse(&document(MAX_ELEMENTS)).unwrap().children.len(),
            MAX_ELEMENTS - 1
        );
        assert_eq!(
            parse(&document(MAX_ELEMENTS + 1)).unwrap_err(),
            "more than 1000000 elements"
        );
    }

    #[test]
    fn parse_reasons_never_quote_the_document() {
        for broken in [
            "<secret-name>",
            "<a></secret-name>",
            "<a secret-name=\"x\" secret-name=\"y\"/>",
            "secret-text",
            "<a/><secret-name/>",
            "<a/>secret-text",
            "",
            "<a secret-name=value/>",
        ] {
            let reason = parse(broken).unwrap_err();
            assert!(!reason.contains("secret"), "{broken:?} -> {reason}");
        }
    }

    #[test]
    fn parse_never_panics_on_seeded_random_input() {
        let (iterations, seed) = crate::fuzz::settings("xml", 0x0C0F_FEE5);
        let pieces = [
            "<",
            ">",
            "</",
            "/>",
            "<a",
            "<b x=\"1\"",
            "=",
            "\"",
            "'",
            "&",
            "&amp;",
            "&#",
            "&#x",
            ";",
            "<![CDATA[",
            "]]>",
            "<!--",
            "-->",
            "<?xml version=\"1.0\"?>",
            "<!DOCTYPE a>",
            "<!ENTITY",
            "a",
            ":",
            "mrng:",
            " ",
            "\n",
            "é",
            "\u{feff}",
        ];
        let mut rng = crate::fuzz::Rng::new(seed);
        for iteration in 0..iterations {
            let mut text = String::new();
            for _ in 0..rng.below(40) {
                text.push_str(rng.pick::<&str>(&pieces));
            }
            let outcome = panic::catch_unwind(|| parse(&text));
            assert!(outcome.is_ok(), "panic on input #{iteration}: {text:?}");
        }
    }
}
