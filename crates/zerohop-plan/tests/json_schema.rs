//! `schemas/datapathplan.schema.json` is current. Regenerate with
//! `ZEROHOP_UPDATE_SCHEMA=1 cargo test -p zerohop-plan --test json_schema`.

#[test]
fn committed_json_schema_is_current() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../schemas/datapathplan.schema.json"
    );
    let generated = zerohop_plan::json_schema();
    if std::env::var_os("ZEROHOP_UPDATE_SCHEMA").is_some() {
        std::fs::write(path, &generated).expect("write schema");
        return;
    }
    let committed = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        committed == generated,
        "{path} is stale; run ZEROHOP_UPDATE_SCHEMA=1 cargo test -p zerohop-plan --test json_schema"
    );
}
