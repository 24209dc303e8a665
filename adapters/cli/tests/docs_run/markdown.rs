//! The fenced blocks of a Markdown document and the markers that say how each runs.
//!
//! A marker is an HTML comment on the last non-blank line before a block's fence
//! (GitHub does not show it). It holds items separated by `;`:
//!
//! - `not run: REASON` — the block is only illustrative; it is never run (the
//!   reason is the rest of the comment).
//! - `needs: TOOL, TOOL` — the block runs only in the `--ignored` test of blocks
//!   needing installed tools, which fails if a tool is missing. A tool is a command
//!   on `PATH`, or `python:MODULE` for a module `python3` imports.
//! - `fresh clone` — the block runs only in the `--ignored` "first five minutes"
//!   test, from a `git clone` of the repository (it builds and installs things).
//! - `file: NAME` — the block's text is written to `NAME` in the working folder
//!   when the run reaches it (the program a later shell block compiles).
//!
//! Any other comment right before a fence is an error, so a misspelt marker cannot
//! silently change how a block runs.

use std::fmt;

/// Where a block runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Class {
    /// By `cargo test`: in a copy of the repository's files, `telering` on `PATH`.
    Default,
    /// Only in the `--ignored` test of blocks needing installed tools.
    Needs(Vec<String>),
    /// Only in the `--ignored` "first five minutes" test, from a fresh clone.
    FreshClone,
    /// Never: the block is illustrative (the reason).
    NotRun(String),
}

/// One fenced block.
#[derive(Clone, Debug)]
pub struct Block {
    /// The document, relative to the repository.
    pub doc: String,
    /// The line of the opening fence (1-based).
    pub line: usize,
    /// The `## ` heading it is under (empty before the first).
    pub section: String,
    /// The fence's first word: `sh`, `rust`, `toml`, ….
    pub lang: String,
    /// The block's text, ending with a newline.
    pub text: String,
    /// Where it runs.
    pub class: Class,
    /// `file: NAME`: written to NAME rather than run.
    pub file: Option<String>,
}

impl Block {
    /// A shell block (`sh`, `bash`, `shell` or `console`).
    pub fn is_shell(&self) -> bool {
        matches!(self.lang.as_str(), "sh" | "bash" | "shell" | "console")
    }

    /// The commands of the block: a `console` block's lines after `$ `, any other
    /// block's whole text.
    pub fn commands(&self) -> String {
        if self.lang != "console" {
            return self.text.clone();
        }
        let lines = self.text.lines().filter_map(|l| l.strip_prefix("$ "));
        lines.map(|l| format!("{l}\n")).collect()
    }
}

impl fmt::Display for Block {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{} (```{})", self.doc, self.line, self.lang)
    }
}

/// Every fenced block of `text` (the document `doc`), or the first bad marker.
pub fn blocks(doc: &str, text: &str) -> Result<Vec<Block>, String> {
    let mut out = Vec::new();
    let mut previous: Option<&str> = None; // the last non-blank line outside blocks
    let mut section = String::new();
    let mut lines = text.lines().enumerate();
    while let Some((index, line)) = lines.next() {
        let trimmed = line.trim_start();
        let Some(info) = trimmed.strip_prefix("```") else {
            if !line.trim().is_empty() {
                previous = Some(line.trim());
            }
            if let Some(heading) = line.strip_prefix("## ") {
                section = heading.trim().to_owned();
            }
            continue;
        };
        let indent = line.len() - trimmed.len();
        let mut body = String::new();
        let mut closed = false;
        for (_, inner) in lines.by_ref() {
            if inner.trim() == "```" {
                closed = true;
                break;
            }
            body.push_str(inner.get(indent..).unwrap_or(inner.trim_start()));
            body.push('\n');
        }
        if !closed {
            return Err(format!("{doc}:{}: the block is never closed", index + 1));
        }
        let (class, file) = match previous.and_then(comment) {
            Some(marker) => {
                parse_marker(marker).map_err(|e| format!("{doc}:{}: {e}", index + 1))?
            }
            None => (Class::Default, None),
        };
        out.push(Block {
            doc: doc.to_owned(),
            line: index + 1,
            section: section.clone(),
            lang: info.split_whitespace().next().unwrap_or("").to_owned(),
            text: body,
            class,
            file,
        });
        previous = None;
    }
    Ok(out)
}

/// The inside of a one-line HTML comment.
fn comment(line: &str) -> Option<&str> {
    line.strip_prefix("<!--")?
        .strip_suffix("-->")
        .map(str::trim)
}

fn parse_marker(marker: &str) -> Result<(Class, Option<String>), String> {
    // A reason is free text: `not run:` takes the rest of the comment.
    if let Some(reason) = marker.strip_prefix("not run:") {
        if reason.trim().is_empty() {
            return Err("`not run:` needs a reason".into());
        }
        return Ok((Class::NotRun(reason.trim().to_owned()), None));
    }
    let (mut class, mut file) = (Class::Default, None);
    for item in marker.split(';').map(str::trim) {
        if let Some(tools) = item.strip_prefix("needs:") {
            let tools: Vec<String> = tools
                .split(',')
                .map(|t| t.trim().to_owned())
                .filter(|t| !t.is_empty())
                .collect();
            if tools.is_empty() {
                return Err("`needs:` names no tool".into());
            }
            class = Class::Needs(tools);
        } else if item == "fresh clone" {
            class = Class::FreshClone;
        } else if let Some(name) = item.strip_prefix("file:") {
            let name = name.trim();
            let plain = |c: char| c.is_ascii_alphanumeric() || "._-".contains(c);
            if name.is_empty() || name.starts_with('.') || !name.chars().all(plain) {
                return Err(format!("`file:` needs a plain file name, not {name:?}"));
            }
            file = Some(name.to_owned());
        } else {
            return Err(format!(
                "unknown marker {item:?} before a block (use `not run: REASON`, \
                 `needs: TOOL`, `fresh clone` or `file: NAME`)"
            ));
        }
    }
    Ok((class, file))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_set_the_class_and_file() {
        let text = "intro\n\n<!-- not run: needs your GPUs -->\n```sh\ntorchrun\n```\n\
                    <!-- needs: g++, python:oteltest -->\n```bash\nls\n```\n\
                    <!-- fresh clone; file: agent.c -->\n```c\nint main;\n```\n```sh\necho\n```\n";
        let blocks = blocks("D.md", text).unwrap();
        let classes: Vec<_> = blocks.iter().map(|b| b.class.clone()).collect();
        assert_eq!(
            classes,
            [
                Class::NotRun("needs your GPUs".into()),
                Class::Needs(vec!["g++".into(), "python:oteltest".into()]),
                Class::FreshClone,
                Class::Default,
            ]
        );
        assert_eq!(blocks[2].file.as_deref(), Some("agent.c"));
        assert_eq!((blocks[3].line, blocks[3].text.as_str()), (15, "echo\n"));
        assert_eq!(blocks[3].section, "");
    }

    #[test]
    fn an_unknown_or_empty_marker_is_an_error() {
        for marker in [
            "<!-- not-run: x -->",
            "<!-- not run: -->",
            "<!-- needs: -->",
            "<!-- file: a b.c -->",
            "<!-- file: ../x -->",
        ] {
            let text = format!("{marker}\n```sh\nls\n```\n");
            assert!(blocks("D.md", &text).is_err(), "{marker}");
        }
    }

    #[test]
    fn indented_fences_and_console_prompts() {
        let text = "- item\n  ```console\n  $ telering stat\n  output\n  ```\n";
        let block = &blocks("D.md", text).unwrap()[0];
        assert_eq!(block.commands(), "telering stat\n");
    }
}
