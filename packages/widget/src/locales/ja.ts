import type { Messages } from "../messages.js"

/** Japanese. */
const messages: Messages = {
  tabPost: "フィードバック",
  tabUpdates: "最新情報",
  tabs: "フィードバック",
  formTitle: "ご要望をお聞かせください",
  board: "ボード",
  loadingBoards: "ボードを読み込み中…",
  noBoards: "公開されているボードはまだありません。",
  boardsFailed: "ボードを読み込めませんでした。",
  retry: "再試行",
  title: "タイトル",
  details: "詳細（任意）",
  submit: "フィードバックを送信",
  sending: "送信中…",
  similar: { other: "類似の投稿がすでに{count}件あります" },
  newTab: "（新しいタブで開きます）",
  thanks: "ありがとうございます！フィードバック「{title}」を投稿しました。",
  sendMore: "別のフィードバックを送信",
  pickBoard: "ボードを選択してください。",
  titleRequired: "フィードバックのタイトルを入力してください。",
  fieldInvalid: "この項目を確認してください。",
  loading: "読み込み中…",
  nothingNew: "新しい情報はまだありません。",
  updatesFailed: "最新情報を読み込めませんでした。",
  unreachable: "このページからフィードバックサービスに接続できません。",
  busy: { other: "フィードバックサービスが混み合っています。{seconds}秒後にもう一度お試しください。" },
  unauthorized: "ログイン情報を確認できませんでした。ページを再読み込みして、もう一度お試しください。",
  notFound: "このボードはもう存在しません。ページを再読み込みして、別のボードを選択してください。",
  checkForm: "入力内容を確認してください。",
  failed: "サーバーで問題が発生しました。もう一度お試しください。"
}
export default messages
