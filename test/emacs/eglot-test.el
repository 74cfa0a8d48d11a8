;;; eglot-test.el --- smith through Emacs eglot, in batch mode  -*- lexical-binding: t -*-

;; run.sh starts two embedded upstreams (AgentSmithy v0, which proposes
;; diffs, and v2, which writes files itself) and runs
;;   emacs --batch -l eglot-test.el -f smith-test-main
;; Every test drives eglot through its public entry points only (`eglot',
;; `eglot-execute-command', `eglot-code-actions', `flymake-diagnostics',
;; `eglot-shutdown'); eglot is not told anything about smith. Every wait is
;; on a condition, never a fixed sleep.

(require 'cl-lib)
(require 'subr-x)
(require 'eglot)
(require 'flymake)

(defvar smith-test-bin (getenv "SMITH_BIN"))
(defvar smith-test-ws (file-truename (getenv "SMITH_TEST_WS")))
(defvar smith-test-url (getenv "SMITH_TEST_URL"))
(defvar smith-test-ws-v2 (file-truename (getenv "SMITH_TEST_WS_V2")))
(defvar smith-test-url-v2 (getenv "SMITH_TEST_URL_V2"))
(defvar smith-test-timeout 20 "Seconds any wait may take.")

;; Emacs 28 has no Go mode; eglot only needs a major mode to manage.
(define-derived-mode smith-go-mode prog-mode "Go"
  "Go files, for the test.")

;; Server-initiated edits (smith's workspace/applyEdit) apply without a
;; y-or-n-p, as a user who trusts the server sets it.
(setq eglot-confirm-server-initiated-edits nil)
(setq eglot-autoshutdown nil)

(defvar smith-test--prompts nil "Questions Emacs asked, newest first.")

(defvar smith-test--tests nil "Tests in definition order, as (NAME . FN).")

(defmacro smith-test (name &rest body)
  "Define a test NAME running BODY."
  (declare (indent 1))
  `(setq smith-test--tests (append smith-test--tests (list (cons ,name (lambda () ,@body))))))

(defun smith-test--fail (fmt &rest args)
  (signal 'error (list (apply #'format fmt args))))

(defun smith-test--wait (what pred)
  "Wait until PRED returns non-nil, reading process output; fail naming WHAT."
  (let ((deadline (+ (float-time) smith-test-timeout)) v)
    (while (and (not (setq v (funcall pred))) (< (float-time) deadline))
      (accept-process-output nil 0.05))
    (or v (smith-test--fail "timed out waiting for %s" what))))

(defun smith-test--eq (got want what)
  (unless (equal got want)
    (smith-test--fail "%s:\nwant %S\ngot  %S" what want got)))

(defun smith-test--calc (name)
  "calc.go with NAME on two lines far apart: a rename gives two hunks."
  (concat "package calc\n\n// Sum adds numbers.\nfunc Sum(xs []int) int {\n"
          "\t" name " := 0\n\tfor _, x := range xs {\n\t\tx = x\n\t}\n"
          (apply #'concat (make-list 8 "\t// padding\n"))
          "\treturn " name "\n}\n"))

(defun smith-test--text (&optional buf)
  (with-current-buffer (or buf (current-buffer))
    (buffer-substring-no-properties (point-min) (point-max))))

(defun smith-test--visit (ws url rel text)
  "Write TEXT to WS/REL, visit it and have eglot manage it with `smith serve'
against URL. Returns the buffer."
  (let ((path (expand-file-name rel ws)))
    (with-temp-file path (insert text))
    (let ((buf (find-file-noselect path)))
      (with-current-buffer buf
        (smith-go-mode)
        (unless (eglot-current-server)
          (eglot '(smith-go-mode) (project-current nil ws) 'eglot-lsp-server
                 (list smith-test-bin "serve" "--upstream" url "--log-level" "debug")
                 "go"))
        (smith-test--wait "eglot to manage the buffer" #'eglot-managed-p)
        ;; flymake asks eglot's backend for diagnostics from now on.
        (flymake-mode 1)
        (flymake-start))
      buf)))

(defun smith-test--command (buf command &optional params)
  "Run smith's COMMAND through workspace/executeCommand from BUF."
  (with-current-buffer buf
    (eglot-execute-command (eglot-current-server) command
                           (if params (vector params) []))))

(defun smith-test--chat (buf message)
  (let ((res (smith-test--command buf 'smith.chat (list :message message))))
    (smith-test--eq (plist-get res :outcome) "completed" (format "outcome of %S" message))
    res))

(defun smith-test--change (buf id)
  (cl-find id (append (smith-test--command buf 'smith.changes (list :dialogId "")) nil)
           :key (lambda (c) (plist-get c :id)) :test #'equal))

(defun smith-test--stop (buf)
  "Shut down BUF's server and kill BUF (unsaved edits dropped)."
  (with-current-buffer buf
    (when-let ((server (eglot-current-server)))
      ;; Kept for run.sh to show when a test failed.
      (when-let ((out (getenv "SMITH_TEST_EVENTS")))
        (with-current-buffer (jsonrpc-events-buffer server)
          (write-region (point-min) (point-max) out t 'silent)))
      (eglot-shutdown server))
    (set-buffer-modified-p nil))
  (kill-buffer buf))

;;; Review through diagnostics and code actions

(defun smith-test--diagnostics ()
  "smith's flymake diagnostics in the current buffer, in buffer order."
  (sort (cl-remove-if-not (lambda (d) (string-prefix-p "smith" (flymake-diagnostic-text d)))
                          (flymake-diagnostics))
        (lambda (a b) (< (flymake-diagnostic-beg a) (flymake-diagnostic-beg b)))))

(defun smith-test--wait-diagnostics (n)
  "Wait until the buffer has N smith diagnostics; return them."
  (smith-test--wait (format "%d smith diagnostics in flymake" n)
                    (lambda () (let ((ds (smith-test--diagnostics)))
                                 (and (= (length ds) n) (or ds t))))))

(defun smith-test--titles ()
  "Titles of the code actions eglot gets at point."
  (mapcar (lambda (a) (plist-get a :title)) (eglot-code-actions (point) (point))))

(defun smith-test--choose (title)
  "Pick TITLE in eglot's code-action menu at point, as a user would."
  (let ((last-nonmenu-event ?\r)) ; invoked from the keyboard, not a mouse menu
    (cl-letf (((symbol-function 'completing-read)
               (lambda (_prompt collection &rest _)
                 (unless (assoc title collection)
                   (smith-test--fail "no %S among the code actions %S" title (mapcar #'car collection)))
                 title)))
      (eglot-code-actions (point) (point) nil t))))

;;; Tests

(smith-test "a rename reviewed with flymake diagnostics and eglot code actions"
  (let* ((before (smith-test--calc "total"))
         (hunk1 (replace-regexp-in-string "total := 0" "sum := 0" before t t))
         (buf (smith-test--visit smith-test-ws smith-test-url "calc.go" before)))
    (unwind-protect
        (with-current-buffer buf
          (smith-test--chat buf "rename total to sum in calc.go")
          (let ((diags (smith-test--wait-diagnostics 2)))
            (smith-test--eq (mapcar (lambda (d) (line-number-at-pos (flymake-diagnostic-beg d))) diags)
                            '(5 17) "lines of the diagnostics")
            (unless (string-match-p "hunk 1 of 2" (flymake-diagnostic-text (car diags)))
              (smith-test--fail "diagnostic of hunk 1: %S" (flymake-diagnostic-text (car diags))))
            ;; Hunk 1: eglot lists "Accept hunk" there, and choosing it edits the buffer.
            (goto-char (flymake-diagnostic-beg (car diags)))
            (let ((titles (smith-test--titles)))
              (dolist (want '("Accept hunk" "Reject hunk" "Accept change (all hunks)" "Reject change" "Preview change"))
                (unless (member want titles)
                  (smith-test--fail "%S not among the code actions at hunk 1: %S" want titles))))
            (smith-test--choose "Accept hunk")
            (smith-test--wait "hunk 1 in the buffer" (lambda () (equal (smith-test--text) hunk1))))
          ;; Hunk 2: rejected; the buffer keeps its line and the diagnostics go.
          (let ((diags (smith-test--wait-diagnostics 1)))
            (goto-char (flymake-diagnostic-beg (car diags)))
            (smith-test--eq (line-number-at-pos) 17 "line of hunk 2's diagnostic")
            (smith-test--choose "Reject hunk")
            (smith-test--wait-diagnostics 0)
            (smith-test--eq (smith-test--text) hunk1 "buffer after rejecting hunk 2"))
          ;; Undo at the applied hunk restores the text.
          (goto-char (point-min))
          (forward-line 4)
          (smith-test--choose "Undo change")
          (smith-test--wait "the original text after undo" (lambda () (equal (smith-test--text) before))))
      (smith-test--stop buf))))

(smith-test "a file the v2 upstream writes updates the open buffer"
  (let* ((before (smith-test--calc "total"))
         (after (smith-test--calc "sum"))
         (buf (smith-test--visit smith-test-ws-v2 smith-test-url-v2 "server.go" before))
         (path (buffer-file-name buf)))
    (unwind-protect
        ;; eglot opens the file of an edit with `find-file-noselect', which
        ;; asks "File changed on disk. Reread from disk?" for a file written
        ;; behind the buffer. The user answers no (yes would make Emacs
        ;; revert the buffer itself, and eglot refuse smith's edit for its
        ;; old version): smith's edit must bring the buffer to the new
        ;; text. The first change of such a buffer also asks whether to
        ;; edit it anyway; the user proceeds.
        (cl-letf (((symbol-function 'yes-or-no-p)
                   (lambda (prompt) (push prompt smith-test--prompts) nil))
                  ((symbol-function 'ask-user-about-supersession-threat)
                   (lambda (_file) (push "supersession" smith-test--prompts) nil)))
          (smith-test--chat buf "rename total to sum in server.go")
          (smith-test--eq (with-temp-buffer (insert-file-contents path) (buffer-string))
                          after "the file the server wrote")
          (smith-test--wait "the buffer to hold the text on disk"
                            (lambda () (equal (smith-test--text buf) after))))
      (smith-test--stop buf))))

(smith-test "two hunks applied in a row through commands (eglot's late didChange)"
  (let* ((before (smith-test--calc "total"))
         (buf (smith-test--visit smith-test-ws smith-test-url "race.go" before)))
    (unwind-protect
        (let* ((res (smith-test--chat buf "rename total to sum in race.go"))
               (id (aref (plist-get res :changes) 0))
               (hunks (plist-get (smith-test--change buf id) :hunks)))
          (smith-test--eq (length hunks) 2 "hunks of the rename")
          ;; No pause between the two: eglot has not sent the didChange of
          ;; the first edit when the second apply is planned.
          (dolist (h (append hunks nil))
            (smith-test--command buf 'smith.change.apply
                                 (list :changeId id :hunks (vector (plist-get h :id)))))
          (smith-test--eq (smith-test--text buf) (smith-test--calc "sum") "buffer after both hunks"))
      (smith-test--stop buf))))

;;; Runner

(defun smith-test-main ()
  "Run the tests whose name contains $SMITH_TEST_FILTER; write the counts."
  (let ((filter (or (getenv "SMITH_TEST_FILTER") ""))
        (passed 0) (failed 0))
    (dolist (test smith-test--tests)
      (when (string-match-p (regexp-quote filter) (car test))
        (condition-case err
            (progn (funcall (cdr test))
                   (setq passed (1+ passed))
                   (princ (format "ok - %s\n" (car test))))
          (error
           (setq failed (1+ failed))
           (princ (format "not ok - %s\n# %s\n" (car test)
                          (replace-regexp-in-string "\n" "\n# " (error-message-string err))))))))
    (with-temp-file (getenv "SMITH_TEST_OUT")
      (insert (format "%d %d\n" passed failed)))
    (kill-emacs (if (= failed 0) 0 1))))

;;; eglot-test.el ends here
