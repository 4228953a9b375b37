"""Audit models, one module per concern; everything is importable from `audit.models`."""

from .activity import ActivityEvent
from .alerts import Alert, WebhookDelivery
from .cases import Case, CaseMap
from .evidence import (
    GENESIS,
    Asset,
    Checkpoint,
    Finding,
    Manifest,
    ManifestChain,
    Placement,
    WriteOnceModel,
)
from .finding_responses import FindingResponse
from .hints import HintRun, PageHint
from .keys import IndexSignature, SigningKey
from .previews import PagePreview, PreviewRequest
from .retention import LegalHoldSync, RetentionAssignment, RetentionEvent, RetentionPolicy
from .review import ReviewFlag
from .tlog import LogCheckpoint, LogCosignature, LogLeaf, LogSubtree, RecoveredRecord
from .verification import VerificationRun

__all__ = [
    "GENESIS",
    "LogCheckpoint",
    "LogCosignature",
    "LogLeaf",
    "LogSubtree",
    "RecoveredRecord",
    "ActivityEvent",
    "Alert",
    "WebhookDelivery",
    "Asset",
    "Case",
    "CaseMap",
    "Checkpoint",
    "Finding",
    "IndexSignature",
    "FindingResponse",
    "Manifest",
    "ManifestChain",
    "PagePreview",
    "HintRun",
    "PageHint",
    "PreviewRequest",
    "Placement",
    "LegalHoldSync",
    "RetentionAssignment",
    "RetentionEvent",
    "RetentionPolicy",
    "ReviewFlag",
    "SigningKey",
    "VerificationRun",
    "WriteOnceModel",
]
