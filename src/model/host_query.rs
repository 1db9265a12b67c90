//! The `GET /api/hosts` query: its parameters, checked (docs/api.md, API: Hosts, "List"), and
//! `Paging`, the `page` and `per_page` every paged list takes (`GET /api/known-hosts` too).
//!
//! Invariants: no I/O; a bad parameter is an `Invalid` naming it; a checked query never
//! holds an empty search term or tag.

use crate::model::validate::Invalid;

/// A filter that, when given, must not be empty.
fn non_empty(name: &str, value: Option<&str>) -> Result<Option<String>, Invalid> {
    match value {
        Some("") => Err(Invalid::new(name, "must not be empty")),
        value => Ok(value.map(str::to_owned)),
    }
}

/// `per_page` defaults to 50 and is clamped to 1000 (docs/api.md, API: Hosts, "List").
pub const DEFAULT_PER_PAGE: u64 = 50;
pub const MAX_PER_PAGE: u64 = 1000;

/// A page of a list: `page` (from 1) and `per_page` (default 50, clamped to 1000), the
/// same parameters for every paged list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Paging {
    pub page: u64,
    pub per_page: u64,
}

impl Paging {
    /// Reads `page` and `per_page`; an error names the parameter (a non-numeric or < 1
    /// value).
    pub fn parse<'a>(get: impl Fn(&str) -> Option<&'a str>) -> Result<Paging, Invalid> {
        Ok(Paging {
            page: positive("page", get("page"), 1)?,
            per_page: positive("per_page", get("per_page"), DEFAULT_PER_PAGE)?.min(MAX_PER_PAGE),
        })
    }

    /// Rows to skip; `None` when the page lies beyond any possible list.
    pub fn offset(&self) -> Option<u64> {
        (self.page - 1)
            .checked_mul(self.per_page)
            .filter(|offset| i64::try_from(*offset).is_ok())
    }
}

/// `GET /api/hosts` parameters, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostQuery {
    pub group: Option<GroupFilter>,
    pub tag: Option<String>,
    /// Never empty (an empty `search` is no filter).
    pub search: Option<String>,
    pub favorite: Option<bool>,
    /// Hosts whose effective identity / username is this (docs/identities.md).
    pub identity: Option<String>,
    pub username: Option<String>,
    /// `q`, the query language (docs/query.md): set by the handler, which answers its own
    /// error (`HostQuery::parse` leaves it `None`).
    pub find: Option<Find>,
    pub sort: Sort,
    pub direction: Direction,
    pub page: u64,
    pub per_page: u64,
}

/// A checked `q` and the time it is answered at (what `used:` and `created:` measure from).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Find {
    pub query: crate::model::query::Query,
    /// Unix seconds.
    pub now: i64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GroupFilter {
    /// `group=` (empty): hosts in no group.
    Ungrouped,
    /// Direct members of this group (an unknown id matches nothing).
    Group(String),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sort {
    Name,
    Hostname,
    CreatedAt,
    LastUsedAt,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    Asc,
    Desc,
}

impl HostQuery {
    /// Checks the list parameters; `get` returns a query parameter's decoded value.
    /// Errors name the parameter: a non-numeric or < 1 page/per_page, an unknown
    /// sort/order, a bad boolean (docs/api.md, API: Hosts, "List").
    pub fn parse<'a>(get: impl Fn(&str) -> Option<&'a str>) -> Result<HostQuery, Invalid> {
        let group = get("group").map(|group| match group {
            "" => GroupFilter::Ungrouped,
            id => GroupFilter::Group(id.to_owned()),
        });
        let tag = match get("tag") {
            Some("") => return Err(Invalid::new("tag", "must not be empty")),
            tag => tag.map(str::to_owned),
        };
        // No name or hostname worth finding holds a NUL; docs/api.md promises a 400.
        if get("search").is_some_and(|search| search.contains('\0')) {
            return Err(Invalid::new("search", "must not contain a NUL character"));
        }
        let search = get("search")
            .filter(|search| !search.is_empty())
            .map(str::to_owned);
        let favorite = match get("favorite") {
            None => None,
            Some("true") => Some(true),
            Some("false") => Some(false),
            Some(_) => return Err(Invalid::new("favorite", "must be true or false")),
        };
        let sort = match get("sort") {
            None | Some("name") => Sort::Name,
            Some("hostname") => Sort::Hostname,
            Some("created_at") => Sort::CreatedAt,
            Some("last_used_at") => Sort::LastUsedAt,
            Some(_) => {
                return Err(Invalid::new(
                    "sort",
                    "must be one of name, hostname, created_at, last_used_at",
                ))
            }
        };
        let direction = match get("order") {
            None | Some("asc") => Direction::Asc,
            Some("desc") => Direction::Desc,
            Some(_) => return Err(Invalid::new("order", "must be asc or desc")),
        };
        let identity = non_empty("identity", get("identity"))?;
        let username = non_empty("username", get("username"))?;
        let Paging { page, per_page } = Paging::parse(get)?;
        Ok(HostQuery {
            group,
            tag,
            search,
            favorite,
            identity,
            username,
            find: None,
            sort,
            direction,
            page,
            per_page,
        })
    }

    /// True when a filter needs what hosts inherit (`identity`, `username`).
    pub fn inherits(&self) -> bool {
        self.identity.is_some() || self.username.is_some()
    }

    /// Rows to skip; `None` when the page lies beyond any possible catalogue.
    pub fn offset(&self) -> Option<u64> {
        Paging {
            page: self.page,
            per_page: self.per_page,
        }
        .offset()
    }
}

/// A page number or size: ASCII digits, at least 1. Digit strings too long for u64
/// saturate (a page far past the end, or a size clamped to the maximum).
fn positive(name: &str, value: Option<&str>, default: u64) -> Result<u64, Invalid> {
    let Some(text) = value else {
        return Ok(default);
    };
    let rule = "must be an integer of at least 1";
    if text.is_empty() || !text.bytes().all(|byte| byte.is_ascii_digit()) {
        return Err(Invalid::new(name, rule));
    }
    let number = text.parse::<u64>().unwrap_or(u64::MAX);
    if number == 0 {
        return Err(Invalid::new(name, rule));
    }
    Ok(number)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::collections::HashMap;

    use crate::model::host_query::{Direction, GroupFilter, HostQuery, Paging, Sort};

    #[test]
    fn search_with_a_nul_is_rejected_and_quotes_are_accepted() {
        assert_eq!(
            query(&[("search", "ab\0")]).err().as_deref(),
            Some("search")
        );
        assert!(query(&[("search", "_\"'%")]).is_ok());
    }

    fn query(pairs: &[(&str, &str)]) -> Result<HostQuery, String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        HostQuery::parse(|name| map.get(name).map(String::as_str)).map_err(|err| err.field)
    }

    #[test]
    fn query_defaults() {
        let query = query(&[]).unwrap();
        assert_eq!(query.sort, Sort::Name);
        assert_eq!(query.direction, Direction::Asc);
        assert_eq!((query.page, query.per_page), (1, 50));
        assert_eq!(query.offset(), Some(0));
    }

    #[test]
    fn per_page_is_clamped_to_1000() {
        assert_eq!(query(&[("per_page", "1000")]).unwrap().per_page, 1000);
        assert_eq!(query(&[("per_page", "1001")]).unwrap().per_page, 1000);
        assert_eq!(
            query(&[("per_page", "99999999999999999999999")])
                .unwrap()
                .per_page,
            1000
        );
    }

    #[test]
    fn page_and_per_page_must_be_integers_of_at_least_1() {
        for bad in ["0", "-1", "1.5", "abc", "", "+2", " 1"] {
            assert_eq!(query(&[("page", bad)]).unwrap_err(), "page", "{bad:?}");
            assert_eq!(
                query(&[("per_page", bad)]).unwrap_err(),
                "per_page",
                "{bad:?}"
            );
        }
        assert_eq!(query(&[("page", "1")]).unwrap().page, 1);
        assert_eq!(query(&[("per_page", "1")]).unwrap().per_page, 1);
    }

    #[test]
    fn paging_alone_reads_page_and_per_page_as_the_host_list_does() {
        let paging = |pairs: &[(&str, &str)]| {
            Paging::parse(|name| {
                pairs
                    .iter()
                    .find(|(key, _)| *key == name)
                    .map(|(_, value)| *value)
            })
        };
        assert_eq!(
            paging(&[]).unwrap(),
            Paging {
                page: 1,
                per_page: 50
            }
        );
        let got = paging(&[("page", "3"), ("per_page", "5000")]).unwrap();
        assert_eq!(
            (got.page, got.per_page, got.offset()),
            (3, 1000, Some(2000))
        );
        assert_eq!(paging(&[("per_page", "0")]).unwrap_err().field, "per_page");
        assert_eq!(paging(&[("page", "x")]).unwrap_err().field, "page");
    }

    #[test]
    fn huge_page_has_no_offset() {
        let query = query(&[("page", "99999999999999999999"), ("per_page", "1000")]).unwrap();
        assert_eq!(query.offset(), None);
    }

    #[test]
    fn sort_order_and_favorite_take_only_known_words() {
        assert_eq!(query(&[("sort", "Name")]).unwrap_err(), "sort");
        assert_eq!(query(&[("order", "up")]).unwrap_err(), "order");
        assert_eq!(query(&[("favorite", "1")]).unwrap_err(), "favorite");
        assert_eq!(
            query(&[("favorite", "false")]).unwrap().favorite,
            Some(false)
        );
        assert_eq!(
            query(&[("sort", "last_used_at"), ("order", "desc")])
                .unwrap()
                .sort,
            Sort::LastUsedAt
        );
    }

    #[test]
    fn empty_group_means_ungrouped_and_empty_search_means_no_filter() {
        let query_ = query(&[("group", ""), ("search", "")]).unwrap();
        assert_eq!(query_.group, Some(GroupFilter::Ungrouped));
        assert_eq!(query_.search, None);
        assert_eq!(query(&[("tag", "")]).unwrap_err(), "tag");
    }
}
