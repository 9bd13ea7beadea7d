// Reading `flamingo-train plan --json` into a Plan: the protocol's codec
// (backend/protocol/wire/plan_record.h, decodePlanJson) decodes, this keeps what
// the GUI shows, as Qt values.
//
// Unknown fields are ignored, so a newer minor version reads. Another major
// version, a missing field or one of the wrong type is an error that names it
// by its JSON path ("the plan's JSON: estimates[3].per_rank.peak: missing").
//
// Thread-safety: a pure function. A 9B plan is most of a megabyte: call it
// off the GUI thread (the plan worker does).
#pragma once

#include <QByteArray>
#include <QString>

#include "app/plan/plan.h"

namespace fs::app {

struct PlanParse {
  Plan plan;
  QString error;  // empty when plan is complete
  bool ok() const { return error.isEmpty(); }
};

PlanParse parsePlanJson(const QByteArray& json);

}  // namespace fs::app
