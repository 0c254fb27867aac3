//! Sections of bench/REPORT.md that one benchmark binary owns, between
//! `<!-- name -->` and `<!-- /name -->` markers.

/// Replaces (or appends) the section marked `name` of bench/REPORT.md;
/// `section` holds its own markers.
pub fn write_section(name: &str, section: &str) -> anyhow::Result<()> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("REPORT.md");
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let (start, end) = (format!("<!-- {name} -->"), format!("<!-- /{name} -->"));
    let updated = match (text.find(&start), text.find(&end)) {
        (Some(a), Some(b)) if a < b => {
            let after = (b + end.len() + 1).min(text.len());
            format!("{}{}{}", &text[..a], section, &text[after..])
        }
        _ => format!("{}\n{}", text.trim_end(), section),
    };
    std::fs::write(&path, updated)?;
    eprintln!("report written to {}", path.display());
    Ok(())
}
