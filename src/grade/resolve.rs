//! Subject resolution: the given files and the files they IMPORT, plan and pod subjects
//! (lineage and the run document), and agent subjects (which plans of a saved session's
//! agent a grade counts). See `docs/grade.md`, "What is run".

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use crate::lang::ast::{self, ClauseKind, Document, Statement, StatementKind};
use crate::lang::{self, Mode};

use super::agent::{AgentSession, Intro};
use super::{GradeError, LineageEntry, Source, plan_refs, stmt};

fn err(m: impl Into<String>) -> GradeError {
    GradeError::new("GRADE", m)
}

/// A document of the grade: given on the command line, or reached through IMPORTs.
#[derive(Debug, Clone)]
pub(super) struct File {
    pub path: String,
    key: PathBuf,
    pub doc: Document,
    /// (imported name, file index, path as written).
    imports: Vec<(String, usize, String)>,
}

/// `a/./b/../c` → `a/c`, without touching the file system (paths given to grade may be
/// relative and need not exist when a test hands documents in memory).
fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            c => out.push(c.as_os_str()),
        }
    }
    out
}

/// Load the given documents and, depth-first, every file their IMPORTs name (relative to
/// the importing file). A file that cannot be read or is refused, and an import cycle, are
/// `code=GRADE` errors naming the file.
pub(super) fn load(sources: &[Source]) -> Result<Vec<File>, GradeError> {
    let mut files: Vec<File> = sources
        .iter()
        .map(|s| File {
            path: s.path.clone(),
            key: normalize(Path::new(&s.path)),
            doc: s.doc.clone(),
            imports: Vec::new(),
        })
        .collect();
    let mut done = vec![false; files.len()];
    for i in 0..sources.len() {
        let mut stack = Vec::new();
        visit(i, &mut files, &mut done, &mut stack)?;
    }
    // Every IMPORT names a plan its file defines (or imports in turn).
    for i in 0..files.len() {
        for (name, _, _) in &files[i].imports {
            lookup(&files, i, name)?;
        }
    }
    Ok(files)
}

fn visit(
    i: usize,
    files: &mut Vec<File>,
    done: &mut Vec<bool>,
    stack: &mut Vec<usize>,
) -> Result<(), GradeError> {
    if done[i] {
        return Ok(());
    }
    stack.push(i);
    let imports: Vec<(String, String)> = files[i]
        .doc
        .statements
        .iter()
        .filter_map(|s| match &s.kind {
            StatementKind::Import(imp) => Some((imp.name.text.clone(), imp.path.clone())),
            _ => None,
        })
        .collect();
    for (name, rel) in imports {
        let base = files[i]
            .key
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        let key = normalize(&base.join(&rel));
        let j = match files.iter().position(|f| f.key == key) {
            Some(j) => {
                if let Some(at) = stack.iter().position(|&s| s == j) {
                    let mut chain: Vec<&str> = stack[at..]
                        .iter()
                        .map(|&s| files[s].path.as_str())
                        .collect();
                    chain.push(files[j].path.as_str());
                    return Err(err(format!(
                        "{}: IMPORT {name} FROM {rel} closes an import cycle ({}): break the cycle",
                        files[i].path,
                        chain.join(" -> ")
                    )));
                }
                j
            }
            None => {
                let path = key.display().to_string();
                let text =
                    crate::limits::read_text_bounded(&key, crate::limits::MAX_DOCUMENT_BYTES)
                        .map_err(|e| {
                            err(format!(
                                "{}: IMPORT {name} FROM {rel}: cannot read {path}: {e}",
                                files[i].path
                            ))
                        })?;
                let doc = lang::check(&text, Mode::File).map_err(|es| {
                    err(format!(
                        "{path} (IMPORTed by {}) is refused: {}",
                        files[i].path,
                        es.first().map(|e| e.one_line()).unwrap_or_default()
                    ))
                })?;
                files.push(File {
                    path,
                    key,
                    doc,
                    imports: Vec::new(),
                });
                done.push(false);
                files.len() - 1
            }
        };
        files[i].imports.push((name, j, rel));
        visit(j, files, done, stack)?;
    }
    stack.pop();
    done[i] = true;
    Ok(())
}

fn own_plan<'a>(f: &'a File, name: &str) -> Option<&'a ast::Plan> {
    f.doc.statements.iter().find_map(|s| match &s.kind {
        StatementKind::Plan(p) if p.name.text == name => Some(p),
        _ => None,
    })
}

/// The definition of `name` in file `fi`'s scope: its own PLAN, else the one its IMPORT of
/// that name reaches (following IMPORT chains; the loader refused cycles).
fn lookup(files: &[File], fi: usize, name: &str) -> Result<Option<usize>, GradeError> {
    let mut at = fi;
    for _ in 0..=files.len() {
        if own_plan(&files[at], name).is_some() {
            return Ok(Some(at));
        }
        let Some((_, j, rel)) = files[at].imports.iter().find(|(n, _, _)| n == name) else {
            return Ok(None);
        };
        if own_plan(&files[*j], name).is_none()
            && !files[*j].imports.iter().any(|(n, _, _)| n == name)
        {
            return Err(err(format!(
                "{}: IMPORT {name} FROM {rel}: {} defines no PLAN {name}",
                files[at].path, files[*j].path
            )));
        }
        at = *j;
    }
    Ok(None)
}

/// The effective `USING` of plan `name` in `doc`: the last USING statement before it.
fn using_before(doc: &Document, name: &str) -> Option<ast::Using> {
    let mut using = None;
    for st in &doc.statements {
        match &st.kind {
            StatementKind::Using(u) => using = Some(u.clone()),
            StatementKind::Plan(p) if p.name.text == name => return using,
            _ => {}
        }
    }
    None
}

/// Push `p` (under its effective USING when it has none of its own) into `out`; returns its
/// statement index.
fn push_plan(out: &mut Document, p: &ast::Plan, using: Option<ast::Using>) -> usize {
    if p.using().is_none()
        && let Some(u) = using
    {
        out.statements.push(stmt(StatementKind::Using(u)));
    }
    out.statements.push(stmt(StatementKind::Plan(p.clone())));
    out.statements.len() - 1
}

fn arm_targets(p: &ast::Plan) -> impl Iterator<Item = &str> {
    p.clauses.iter().filter_map(|c| match &c.kind {
        ClauseKind::Arm(n) => Some(n.text.as_str()),
        _ => None,
    })
}

/// A plan or pod subject, resolved: its file, the lineage, the run document, the lineage
/// index and statement index of each root, and whether any lineage plan is regime-gated.
pub(super) struct BookSubject {
    pub file: String,
    pub lineage: Vec<LineageEntry>,
    pub doc: Document,
    pub roots: Vec<(usize, usize)>,
    pub gated: bool,
}

/// The files (indices) that define a PLAN `name`.
pub(super) fn defining(files: &[File], name: &str) -> Vec<usize> {
    (0..files.len())
        .filter(|&i| own_plan(&files[i], name).is_some())
        .collect()
}

/// Resolve a plan subject (`roots` = `[name]`, defined in file `fi`) or a pod subject
/// (`roots` = the plans of the pod's file that no plan of it ARMs): breadth-first over ARM
/// clauses, each plan looked up in the scope of the file of the plan that ARMs it.
pub(super) fn book(
    files: &[File],
    fi: usize,
    roots: &[String],
    what: &str,
) -> Result<BookSubject, GradeError> {
    // (entry, file index)
    let mut lineage: Vec<(LineageEntry, usize)> = Vec::new();
    for r in roots {
        let Some(at) = lookup(files, fi, r)? else {
            return Err(err(format!("no PLAN named {r} in {}", files[fi].path)));
        };
        lineage.push((
            LineageEntry {
                name: r.clone(),
                parent: None,
                path: r.clone(),
            },
            at,
        ));
    }
    let mut k = 0;
    while k < lineage.len() {
        let (cur, at) = lineage[k].clone();
        let p = own_plan(&files[at], &cur.name).ok_or_else(|| err("lineage lookup"))?;
        for n in arm_targets(p) {
            if lineage.iter().any(|(e, _)| e.name == n) {
                continue;
            }
            let Some(nat) = lookup(files, at, n)? else {
                return Err(err(format!(
                    "plan {n} (ARMed by {}) is not in {} nor IMPORTed by it",
                    cur.name, files[at].path
                )));
            };
            lineage.push((
                LineageEntry {
                    name: n.to_string(),
                    parent: Some(cur.name.clone()),
                    path: format!("{}>{}", cur.path, n),
                },
                nat,
            ));
        }
        k += 1;
    }
    let members: BTreeSet<&str> = lineage.iter().map(|(e, _)| e.name.as_str()).collect();
    for (e, at) in &lineage {
        let p = own_plan(&files[*at], &e.name).ok_or_else(|| err("lineage lookup"))?;
        for r in plan_refs(p) {
            if !members.contains(r.as_str()) {
                return Err(err(format!(
                    "plan {} reads plan({r}), which is outside the lineage of {what}: a grade replays the subject and its ARM chain alone",
                    e.name
                )));
            }
        }
    }
    // The run document: the subject file's BOOK and POD statements, then its lineage plans
    // in document order, then lineage plans from IMPORTed files in lineage order, each
    // under its effective USING.
    let mut doc = Document {
        statements: Vec::new(),
        tail: Vec::new(),
    };
    for st in &files[fi].doc.statements {
        if matches!(st.kind, StatementKind::Book(_) | StatementKind::Pod(_)) {
            let mut s: Statement = st.clone();
            s.leading.clear();
            s.trailing = None;
            doc.statements.push(s);
        }
    }
    let mut index: BTreeMap<String, usize> = BTreeMap::new();
    let mut gated = false;
    let mut using: Option<ast::Using> = None;
    for st in &files[fi].doc.statements {
        match &st.kind {
            StatementKind::Using(u) => using = Some(u.clone()),
            StatementKind::Plan(p)
                if lineage
                    .iter()
                    .any(|(e, at)| *at == fi && e.name == p.name.text) =>
            {
                gated |= p.regime.as_ref().is_some_and(|r| !r.is_empty());
                let si = push_plan(&mut doc, p, using.clone());
                index.insert(p.name.text.clone(), si);
            }
            _ => {}
        }
    }
    for (e, at) in &lineage {
        if *at == fi {
            continue;
        }
        let p = own_plan(&files[*at], &e.name).ok_or_else(|| err("lineage lookup"))?;
        gated |= p.regime.as_ref().is_some_and(|r| !r.is_empty());
        let si = push_plan(&mut doc, p, using_before(&files[*at].doc, &e.name));
        index.insert(e.name.clone(), si);
    }
    let roots = lineage
        .iter()
        .enumerate()
        .filter(|(_, (e, _))| e.parent.is_none())
        .filter_map(|(li, (e, _))| index.get(&e.name).map(|si| (li, *si)))
        .collect();
    Ok(BookSubject {
        file: files[fi].path.clone(),
        lineage: lineage.into_iter().map(|(e, _)| e).collect(),
        doc,
        roots,
        gated,
    })
}

/// The roots of a pod: the plans of its file that no plan of that file ARMs, in order.
pub(super) fn pod_roots(f: &File) -> Vec<String> {
    let plans: Vec<&ast::Plan> = f
        .doc
        .statements
        .iter()
        .filter_map(|s| match &s.kind {
            StatementKind::Plan(p) => Some(p),
            _ => None,
        })
        .collect();
    let armed: BTreeSet<&str> = plans.iter().flat_map(|p| arm_targets(p)).collect();
    plans
        .iter()
        .filter(|p| !armed.contains(p.name.text.as_str()))
        .map(|p| p.name.text.clone())
        .collect()
}

/// The files (indices) that hold a POD `name`.
pub(super) fn pod_files(files: &[File], name: &str) -> Vec<usize> {
    (0..files.len())
        .filter(|&i| {
            files[i]
                .doc
                .statements
                .iter()
                .any(|s| matches!(&s.kind, StatementKind::Pod(p) if p.name.text == name))
        })
        .collect()
}

/// An agent subject, resolved: the counted plans and, per root, the document its null
/// replays (the root, its ARM descendants in the turn that armed it, their USINGs) with the
/// root's statement index.
pub(super) struct AgentSubject {
    pub lineage: Vec<LineageEntry>,
    pub roots: Vec<(usize, Document, usize)>,
    pub gated: bool,
}

fn doc_plans(doc: &Document) -> Vec<&ast::Plan> {
    doc.statements
        .iter()
        .filter_map(|s| match &s.kind {
            StatementKind::Plan(p) => Some(p),
            _ => None,
        })
        .collect()
}

/// Names reachable from `root` over ARM clauses within `doc` (breadth-first, root first).
fn arm_tree(doc: &Document, root: &str) -> Vec<(String, Option<String>)> {
    let plans = doc_plans(doc);
    let mut out: Vec<(String, Option<String>)> = vec![(root.to_string(), None)];
    let mut q: VecDeque<String> = VecDeque::from([root.to_string()]);
    while let Some(cur) = q.pop_front() {
        if let Some(p) = plans.iter().find(|p| p.name.text == cur) {
            for n in arm_targets(p) {
                if plans.iter().any(|x| x.name.text == n) && !out.iter().any(|(x, _)| x == n) {
                    out.push((n.to_string(), Some(cur.clone())));
                    q.push_back(n.to_string());
                }
            }
        }
    }
    out
}

/// Which of the agent's plans a grade counts.
pub(super) enum AgentPick<'a> {
    /// Every plan the agent armed.
    All,
    /// Plans first armed by turns answered at this wake.
    Wake(&'a str),
    /// Plans first armed by turns answering this View.
    View(&'a str),
    /// This plan and its ARM descendants (in the turn that first armed it).
    Plan(&'a str),
}

/// Resolve an agent subject. `null`: the grade asks `VS null`, whose replays need each
/// root's document to stand alone.
pub(super) fn agent(
    a: &Arc<AgentSession>,
    pick: AgentPick<'_>,
    title: &str,
    null: bool,
) -> Result<AgentSubject, GradeError> {
    let intro = |n: &str| a.intros.iter().find(|i| i.name == n);
    // (name, parent) in order.
    let chosen: Vec<(String, Option<String>)> = match pick {
        AgentPick::Plan(x) => match intro(x) {
            Some(i) => arm_tree(&i.doc, x),
            None => Vec::new(),
        },
        _ => {
            let keep = |i: &Intro| match pick {
                AgentPick::Wake(w) => i.wake == w,
                AgentPick::View(v) => i.view == v,
                _ => true,
            };
            let names: Vec<&Intro> = a.intros.iter().filter(|i| keep(i)).collect();
            names
                .iter()
                .map(|i| {
                    let parent = doc_plans(&i.doc)
                        .into_iter()
                        .find(|p| {
                            arm_targets(p).any(|t| t == i.name)
                                && names.iter().any(|n| n.name == p.name.text)
                        })
                        .map(|p| p.name.text.clone());
                    (i.name.clone(), parent)
                })
                .collect()
        }
    };
    if chosen.is_empty() {
        let why = match pick {
            AgentPick::Wake(w) => format!(
                "no turn answered at wake {w} armed a plan (wakes with turns: {})",
                a.wakes().join(", ")
            ),
            AgentPick::View(v) => format!(
                "no turn answering View {v} armed a plan (Views answered by plan-arming turns: {})",
                a.views().join(", ")
            ),
            AgentPick::Plan(x) => format!("the agent never armed a plan named {x}"),
            AgentPick::All => "the agent armed no plan".to_string(),
        };
        return Err(err(format!("{title}: {}: {why}", a.path)));
    }
    // Paths: walk parents (chosen parents are chosen names; guard against ARM cycles).
    let parent_of: BTreeMap<&str, Option<&str>> = chosen
        .iter()
        .map(|(n, p)| (n.as_str(), p.as_deref()))
        .collect();
    let mut lineage = Vec::new();
    for (n, p) in &chosen {
        let mut path = vec![n.as_str()];
        let mut cur = p.as_deref();
        while let Some(c) = cur {
            if path.contains(&c) || path.len() > chosen.len() {
                break;
            }
            path.push(c);
            cur = parent_of.get(c).copied().flatten();
        }
        path.reverse();
        lineage.push(LineageEntry {
            name: n.clone(),
            parent: p.clone(),
            path: path.join(">"),
        });
    }
    let mut gated = false;
    let mut roots = Vec::new();
    for (li, e) in lineage.iter().enumerate() {
        let Some(i) = intro(&e.name) else { continue };
        if let Some(p) = doc_plans(&i.doc)
            .into_iter()
            .find(|p| p.name.text == e.name)
        {
            gated |= p.regime.as_ref().is_some_and(|r| !r.is_empty());
        }
        if e.parent.is_some() {
            continue;
        }
        let tree = arm_tree(&i.doc, &e.name);
        let members: BTreeSet<&str> = tree.iter().map(|(n, _)| n.as_str()).collect();
        let mut doc = Document {
            statements: Vec::new(),
            tail: Vec::new(),
        };
        let mut root_si = 0;
        let mut using = None;
        for st in &i.doc.statements {
            match &st.kind {
                StatementKind::Using(u) => using = Some(u.clone()),
                StatementKind::Plan(p) if members.contains(p.name.text.as_str()) => {
                    if null {
                        for r in plan_refs(p)
                            .into_iter()
                            .chain(arm_targets(p).map(String::from))
                        {
                            if !members.contains(r.as_str()) {
                                return Err(err(format!(
                                    "{title}: VS null cannot replay the agent's plan {} on its own: {} refers to {r}, which is not in {}'s ARM tree (a null draw replays one plan and the plans it ARMs, alone; the agent's null is the sum of every plan's, so it cannot leave one out): grade without --vs null (--vs ungated needs no null), or grade the plans that stand alone with GRADE plan NAME",
                                    e.name, p.name.text, e.name
                                )));
                            }
                        }
                    }
                    let si = push_plan(&mut doc, p, using.clone());
                    if p.name.text == e.name {
                        root_si = si;
                    }
                }
                _ => {}
            }
        }
        roots.push((li, doc, root_si));
    }
    Ok(AgentSubject {
        lineage,
        roots,
        gated,
    })
}
