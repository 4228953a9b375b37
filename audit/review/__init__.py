"""What reviewers work with: the job page, page previews, review flags and case maps."""
